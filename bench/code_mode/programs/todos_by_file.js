// Every `TODO:` line under src/, grouped by file, the text after `TODO:` in line order.
const { matches = [], truncated } = await tools.grep({ pattern: "TODO:", path: "src" });
if (truncated) throw new Error("the grep was truncated");
const byFile = {};
for (const m of matches) {
  (byFile[m.path] ??= []).push(m.text.slice(m.text.indexOf("TODO:") + 5).trim());
}
return byFile;
