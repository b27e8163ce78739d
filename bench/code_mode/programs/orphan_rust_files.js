// Rust files under src/ that no `mod NAME;` reaches from src/lib.rs.
const [{ matches: files }, { matches: declarations = [] }] = await Promise.all([
  tools.glob({ pattern: "src/**/*.rs" }),
  tools.grep({ pattern: "^\\s*(pub(\\(\\w+\\))?\\s+)?mod\\s+\\w+\\s*;", path: "src" }),
]);
const declared = {};
for (const d of declarations) {
  (declared[d.path] ??= []).push(/mod\s+(\w+)\s*;/.exec(d.text)[1]);
}
const exists = new Set(files);
const reached = new Set();
const stack = ["src/lib.rs"];
while (stack.length > 0) {
  const file = stack.pop();
  if (!exists.has(file) || reached.has(file)) continue;
  reached.add(file);
  const slash = file.lastIndexOf("/");
  const [dir, base] = [file.slice(0, slash), file.slice(slash + 1)];
  const children = base === "lib.rs" || base === "mod.rs" ? dir : `${dir}/${base.slice(0, -3)}`;
  for (const name of declared[file] ?? []) {
    stack.push(`${children}/${name}.rs`, `${children}/${name}/mod.rs`);
  }
}
return files.filter((f) => !reached.has(f)).sort();
