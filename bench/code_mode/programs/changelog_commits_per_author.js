// Commits that changed CHANGELOG.md, per author.
const { commits } = await tools.git_log({ path: "CHANGELOG.md", max_count: 200 });
const counts = {};
for (const c of commits) {
  const name = c.author.replace(/ <[^>]*>$/, "");
  counts[name] = (counts[name] ?? 0) + 1;
}
return counts;
