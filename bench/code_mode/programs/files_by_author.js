// For each author of the last 50 commits, the files they changed.
const byAuthor = {};
for (let k = 0; k < 50; k++) {
  const { text } = await tools.git_show({ rev: `HEAD~${k}` });
  const author = /^Author:\s*(.*?) <[^>]*>$/m.exec(text)[1];
  const files = (byAuthor[author] ??= new Set());
  for (const m of text.matchAll(/^diff --git a\/(.+) b\/(.+)$/gm)) files.add(m[1]).add(m[2]);
}
return Object.fromEntries(Object.entries(byAuthor).map(([author, files]) => [author, [...files].sort()]));
