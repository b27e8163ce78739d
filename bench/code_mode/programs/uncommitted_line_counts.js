// Lines added and removed per file by the unstaged changes, hunk lines only.
const { text, omitted_bytes } = await tools.git_diff();
if (omitted_bytes > 0) throw new Error("the diff was cut");
const counts = {};
let file = null;
let inHunk = false;
for (const line of text.split("\n")) {
  const header = /^diff --git a\/.+ b\/(.+)$/.exec(line);
  if (header) {
    file = header[1];
    counts[file] = { added: 0, removed: 0 };
    inHunk = false;
  } else if (line.startsWith("@@")) inHunk = true;
  else if (inHunk && line.startsWith("+")) counts[file].added++;
  else if (inHunk && line.startsWith("-")) counts[file].removed++;
}
return counts;
