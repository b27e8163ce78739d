// For each note, the `src/....rs` paths it mentions that do not exist.
const [{ matches = [] }, { matches: files }] = await Promise.all([
  tools.grep({ pattern: "src/[A-Za-z0-9_/]+\\.rs", path: "notes" }),
  tools.glob({ pattern: "src/**/*.rs" }),
]);
const exists = new Set(files);
const missing = {};
for (const m of matches) {
  for (const [path] of m.text.matchAll(/src\/[A-Za-z0-9_\/]+\.rs/g)) {
    if (!exists.has(path)) (missing[m.path] ??= new Set()).add(path);
  }
}
return Object.fromEntries(Object.entries(missing).map(([note, paths]) => [note, [...paths].sort()]));
