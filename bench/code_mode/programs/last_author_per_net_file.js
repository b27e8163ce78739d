// For each file under src/net/ with a commit, the author of its last commit.
const { matches } = await tools.glob({ pattern: "src/net/**" });
const last = {};
for (const path of matches) {
  const { commits } = await tools.git_log({ path, max_count: 1 });
  if (commits.length > 0) last[path] = commits[0].author.replace(/ <[^>]*>$/, "");
}
return last;
