// `TODO:` lines the working tree adds against v0.2.0, by file, in line order.
const { text, omitted_bytes } = await tools.git_diff({ base: "v0.2.0" });
if (omitted_bytes > 0) throw new Error("the diff was cut");
const todos = {};
let file = null;
let inHunk = false;
for (const line of text.split("\n")) {
  const header = /^diff --git a\/.+ b\/(.+)$/.exec(line);
  if (header) {
    file = header[1];
    inHunk = false;
  } else if (line.startsWith("@@")) inHunk = true;
  else if (inHunk && line.startsWith("+") && line.includes("TODO:")) {
    (todos[file] ??= []).push(line.slice(line.indexOf("TODO:") + 5).trim());
  }
}
return todos;
