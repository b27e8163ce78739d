// Modified (` M`) and untracked (`??`) paths of the working tree.
const { entries } = await tools.git_status();
const modified = [];
const untracked = [];
for (const e of entries) {
  if (e.code === " M") modified.push(e.path);
  else if (e.code === "??") untracked.push(e.path);
  else throw new Error(`status ${JSON.stringify(e.code)} for ${e.path}`);
}
return { modified: modified.sort(), untracked: untracked.sort() };
