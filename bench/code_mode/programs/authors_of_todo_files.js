// For each file under src/ holding `TODO:`, the sorted authors of the commits that changed it.
const { files = [] } = await tools.grep({ pattern: "TODO:", path: "src", output: "files" });
const authors = {};
for (const { path } of files) {
  const { commits } = await tools.git_log({ path, max_count: 200 });
  authors[path] = [...new Set(commits.map((c) => c.author.replace(/ <[^>]*>$/, "")))].sort();
}
return authors;
