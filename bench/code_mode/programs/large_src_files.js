// Files under src/, at any depth, larger than 2048 bytes: list every directory from src/ down.
const large = [];
const queue = ["src"];
while (queue.length > 0) {
  const dir = queue.shift();
  const { entries, truncated } = await tools.list_directory({ path: dir });
  if (truncated) throw new Error(`the listing of ${dir} was truncated`);
  for (const e of entries) {
    const path = `${dir}/${e.name}`;
    if (e.kind === "dir") queue.push(path);
    else if (e.kind === "file" && e.size > 2048) large.push(path);
  }
}
return large.sort();
