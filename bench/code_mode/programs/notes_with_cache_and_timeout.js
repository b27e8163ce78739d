// Notes that mention both `cache` and `timeout`, ignoring case.
const [cache, timeout] = await Promise.all(
  ["cache", "timeout"].map((pattern) =>
    tools.grep({ pattern, path: "notes", case_insensitive: true, output: "files" }),
  ),
);
const both = new Set((timeout.files ?? []).map((f) => f.path));
return (cache.files ?? []).map((f) => f.path).filter((p) => both.has(p)).sort();
