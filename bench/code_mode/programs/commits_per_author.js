// Commits per author (name without e-mail) among the last 50.
const { commits } = await tools.git_log({ max_count: 50 });
const counts = {};
for (const c of commits) {
  const name = c.author.replace(/ <[^>]*>$/, "");
  counts[name] = (counts[name] ?? 0) + 1;
}
return counts;
