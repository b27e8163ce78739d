// Files under src/ that mention `retry` (any case) and have no #[cfg(test)] module.
const [retry, tested] = await Promise.all([
  tools.grep({ pattern: "retry", path: "src", case_insensitive: true, output: "files" }),
  tools.grep({ pattern: "#\\[cfg\\(test\\)\\]", path: "src", output: "files" }),
]);
if (retry.truncated || tested.truncated) throw new Error("a grep was truncated");
const withTests = new Set((tested.files ?? []).map((f) => f.path));
return (retry.files ?? []).map((f) => f.path).filter((p) => !withTests.has(p)).sort();
