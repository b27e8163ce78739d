"""The tool definitions `toolcat export` writes, checked with the providers' own Python SDKs.

Run by .ci/run in its venv (the SDKs pinned there):

    python tests/providers/check_exports.py TOOLCAT DATA_DIR

For three catalogs (the reference catalog compiled into TOOLCAT, the GitHub MCP server's
toolsnaps and LiveMCPBench, both imported from DATA_DIR with `toolcat import`), every tool of
`toolcat export --format F` must validate as the SDK's request type:

- `--format openai`: `openai.types.chat.ChatCompletionToolParam`;
- `--format openai-responses`: `openai.types.responses.FunctionToolParam`;
- `--format anthropic`: `anthropic.types.ToolParam` (`anthropic.types.beta.BetaToolParam` for a
  tool with `defer_loading`);
- `--format gemini`: each entry as `google.genai.types.Tool`, each declaration as
  `google.genai.types.FunctionDeclaration` (pydantic models of their own).

And the reference catalog's `coding` plan, as `toolcat plan` sends it to Anthropic and to the
Responses API, with toolcat's own `tool_search` and with `--hosted-search`: every entry as the
SDK's request tool union (`anthropic.types.beta.BetaToolUnionParam`,
`openai.types.responses.ToolParam`), deferred tools, hosted search tools and namespaces included.

The OpenAI and Anthropic request types are TypedDicts. Validated with a pydantic `TypeAdapter`,
a TypedDict checks that every required key is there and that each value has the declared type
(a `Literal` such as `type: "function"`, `str`, `bool`, nested TypedDicts); unknown keys are
silently dropped unless the TypedDict's config forbids them, so `forbid_extra_keys` sets
`extra="forbid"` on each TypedDict reachable from the request type. What TypedDict validation
cannot catch: anything inside a JSON Schema (`parameters` and `input_schema` are typed
`Dict[str, object]`), name patterns and lengths, and rules between fields. The JSON Schemas are
what the conformance test in Rust (`tests/conformance.rs`) checks, and what the comparison with
OpenAI's converter below checks for strict tools. `google.genai.types.Schema` forbids unknown
keys but is wider than the `Schema` the API takes (it has `ref`, `defs`,
`additional_properties`, which the SDK converts), so it checks the shape, not the subset.

The converter comparison: for every OpenAI tool exported with `"strict": true`, OpenAI's own
strict-mode converter (`openai.lib._pydantic._ensure_strict_json_schema`, which
`to_strict_json_schema` applies) must change nothing in toolcat's `parameters` (a fixed point),
and applied to the tool's input schema (the `inputSchema` of `--format mcp`) must give toolcat's
`parameters` up to the differences listed in `normalise`.

Prints the counts per catalog and format; exits 1 on any failure, naming the tool and the SDK's
error.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import tempfile
import typing
from pathlib import Path

import typing_extensions
from pydantic import ConfigDict, TypeAdapter, ValidationError

from anthropic.types import ToolParam
from anthropic.types.beta import BetaToolParam, BetaToolUnionParam
from google.genai import types as genai
from openai.lib._pydantic import _ensure_strict_json_schema
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam
from openai.types.responses import ToolParam as ResponsesToolParam


def forbid_extra_keys(tp: object, seen: set | None = None) -> None:
    """Sets `extra="forbid"` on every TypedDict reachable from `tp` (through its fields, unions,
    `Required`, `Optional`, lists ...), so validation refuses keys the SDK does not declare."""
    seen = set() if seen is None else seen
    if typing_extensions.is_typeddict(tp) and tp not in seen:
        seen.add(tp)
        tp.__pydantic_config__ = ConfigDict(extra="forbid")
        for hint in typing.get_type_hints(tp).values():
            forbid_extra_keys(hint, seen)
    for arg in typing.get_args(tp):
        forbid_extra_keys(arg, seen)


for request_type in (ChatCompletionToolParam, FunctionToolParam, ToolParam, BetaToolParam,
                     BetaToolUnionParam, ResponsesToolParam):
    forbid_extra_keys(request_type)
OPENAI_CHAT = TypeAdapter(ChatCompletionToolParam)
OPENAI_RESPONSES = TypeAdapter(FunctionToolParam)
ANTHROPIC = TypeAdapter(ToolParam)
ANTHROPIC_BETA = TypeAdapter(BetaToolParam)
# A plan's request: custom tools with `defer_loading`, the hosted BM25 tool search tool
# (`BetaToolSearchToolBm25_20251119Param`); Responses functions, `tool_search`, `namespace`.
ANTHROPIC_REQUEST_TOOL = TypeAdapter(BetaToolUnionParam)
RESPONSES_REQUEST_TOOL = TypeAdapter(ResponsesToolParam)


def strict(schema: dict) -> dict:
    """OpenAI's converter on a copy of `schema` (it mutates its input)."""
    schema = copy.deepcopy(schema)
    return _ensure_strict_json_schema(schema, path=(), root=schema)


def normalise(node: object) -> object:
    """Removes the differences between toolcat's strict schemas and OpenAI's converter that
    toolcat documents (`toolcat_catalog::targets`, OpenAI section), on either side:

    1. toolcat makes each optional property required *and nullable* (the converter only makes
       it required): `null` is removed from `type` lists and `enum`s, and a `{"type": "null"}`
       branch from `anyOf` (a single branch left is merged into its node);
    2. toolcat writes `const: c` as `enum: [c]`;
    3. toolcat writes a `oneOf` of distinct constants as `anyOf` (strict mode refuses `oneOf`);
    4. toolcat drops `format` on an `integer` or `number` (JSON Schema defines formats for
       strings; strict mode refuses the others);
    5. toolcat gives an object without `properties` (closed by `additionalProperties: false`)
       `properties: {}` and `required: []`: empty ones are removed.
    """
    if isinstance(node, list):
        return [normalise(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: normalise(v) for k, v in node.items()}
    if "const" in node and "enum" not in node:
        node["enum"] = [node.pop("const")]
    if "oneOf" in node and "anyOf" not in node:
        node["anyOf"] = node.pop("oneOf")
    types = node.get("type")
    if isinstance(types, list):
        rest = [t for t in types if t != "null"]
        node["type"] = rest[0] if len(rest) == 1 else rest
    if isinstance(node.get("enum"), list):
        node["enum"] = [v for v in node["enum"] if v is not None]
    if node.get("type") in ("integer", "number"):
        node.pop("format", None)
    for key in ("properties", "required"):
        if node.get(key) in ({}, []):
            del node[key]
    if isinstance(node.get("anyOf"), list):
        branches = [b for b in node["anyOf"] if b != {"type": "null"}]
        if len(branches) == 1 and isinstance(branches[0], dict):
            del node["anyOf"]
            node = {**branches[0], **node}
        else:
            node["anyOf"] = branches
    return node


class Checker:
    def __init__(self, toolcat: str) -> None:
        self.toolcat = toolcat
        self.failures: list[str] = []

    def export(self, catalog: Path | None, fmt: str) -> tuple[object, str]:
        args = [self.toolcat, "export", "--format", fmt]
        if catalog is not None:
            args += ["--catalog", str(catalog)]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"`{' '.join(args)}` exited {done.returncode}:\n{done.stderr}")
        return json.loads(done.stdout), done.stderr

    def fail(self, label: str, fmt: str, tool: str, error: object) -> None:
        self.failures.append(f"{label} --format {fmt}: `{tool}`: {error}")

    def validate(self, label: str, fmt: str, adapter: TypeAdapter, tool: dict, name: str) -> bool:
        try:
            adapter.validate_python(tool, strict=True)
            return True
        except ValidationError as e:
            self.fail(label, fmt, name, e)
            return False

    def catalog(self, label: str, catalog: Path | None) -> None:
        mcp, _ = self.export(catalog, "mcp")
        inputs = {t["name"]: t["inputSchema"] for t in mcp["tools"]}

        chat, _ = self.export(catalog, "openai")
        ok = n_strict = fixed = same = 0
        for tool in chat:
            name = tool.get("function", {}).get("name", "?")
            ok += self.validate(label, "openai", OPENAI_CHAT, tool, name)
            function = tool.get("function", {})
            if function.get("strict") is not True:
                continue
            n_strict += 1
            parameters = function["parameters"]
            if strict(parameters) == parameters:
                fixed += 1
            else:
                self.fail(label, "openai", name, "OpenAI's converter changes the strict schema: "
                          + json.dumps(strict(parameters))[:2000])
            converted = strict(inputs[name])
            if normalise(converted) == normalise(parameters):
                same += 1
            else:
                self.fail(label, "openai", name,
                          "differs from OpenAI's converter on the input schema beyond the listed "
                          f"differences:\n  converter: {json.dumps(normalise(converted))[:2000]}"
                          f"\n  toolcat:   {json.dumps(normalise(parameters))[:2000]}")
        print(f"{label}: openai: {ok} of {len(chat)} valid ChatCompletionToolParam, "
              f"{n_strict} strict ({len(chat) - n_strict} `strict: false`); converter: "
              f"{fixed} fixed points, {same} equal to its conversion of the input")

        responses, _ = self.export(catalog, "openai-responses")
        ok = sum(self.validate(label, "openai-responses", OPENAI_RESPONSES, t, t.get("name", "?"))
                 for t in responses)
        for tool in responses:
            # The same definitions as Chat Completions, flat.
            function = next((t["function"] for t in chat if t["function"]["name"] == tool.get("name")), None)
            flat = {"type": "function", **(function or {})}
            if function is None or tool != flat:
                self.fail(label, "openai-responses", tool.get("name", "?"),
                          "not the Chat Completions definition, flattened")
        print(f"{label}: openai-responses: {ok} of {len(responses)} valid FunctionToolParam")

        anthropic, _ = self.export(catalog, "anthropic")
        ok = sum(self.validate(label, "anthropic",
                               ANTHROPIC_BETA if "defer_loading" in t else ANTHROPIC,
                               t, t.get("name", "?"))
                 for t in anthropic)
        print(f"{label}: anthropic: {ok} of {len(anthropic)} valid ToolParam")

        gemini, stderr = self.export(catalog, "gemini")
        declarations = 0
        for entry in gemini:
            try:
                genai.Tool.model_validate(entry)
            except ValidationError as e:
                self.fail(label, "gemini", "(tool entry)", e)
            for declaration in entry.get("functionDeclarations", []):
                declarations += 1
                try:
                    genai.FunctionDeclaration.model_validate(declaration)
                except ValidationError as e:
                    self.fail(label, "gemini", declaration.get("name", "?"), e)
        refused = [line for line in stderr.splitlines() if line.startswith("gemini: `")]
        missing = len(inputs) - declarations
        if missing != len({line.split("`")[1] for line in refused}):
            self.fail(label, "gemini", "(all)", f"{missing} tools left out, but stderr names "
                      f"{len(refused)} refusals:\n{stderr}")
        print(f"{label}: gemini: {declarations} declarations valid as FunctionDeclaration, "
              f"{missing} refused")


    def plans(self) -> None:
        """The reference catalog's `coding` plan as each provider's request `tools`, with
        toolcat's own `tool_search` and with the provider's hosted tool search: every entry (custom
        tools with `defer_loading`, the hosted search tools, Responses namespaces) validates as the
        SDK's request tool union."""
        for fmt, adapter in [("anthropic", ANTHROPIC_REQUEST_TOOL),
                             ("openai-responses", RESPONSES_REQUEST_TOOL)]:
            for hosted in (False, True):
                args = [self.toolcat, "plan", "--profile", "coding", "--format", fmt]
                args += ["--hosted-search"] if hosted else []
                done = subprocess.run(args, capture_output=True, text=True)
                if done.returncode != 0:
                    raise SystemExit(f"`{' '.join(args)}` exited {done.returncode}:\n{done.stderr}")
                tools = json.loads(done.stdout)
                label = f"plan {fmt}{' --hosted-search' if hosted else ''}"
                ok = sum(self.validate("reference", label, adapter, t, t.get("name", t.get("type", "?")))
                         for t in tools)
                kinds = sorted({t.get("type", "custom") for t in tools})
                deferred = sum(1 for t in tools if t.get("defer_loading")) + sum(
                    1 for t in tools if t.get("type") == "namespace"
                    for f in t.get("tools", []) if f.get("defer_loading"))
                print(f"reference: {label}: {ok} of {len(tools)} valid request tools "
                      f"({', '.join(kinds)}; {deferred} deferred)")


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: check_exports.py TOOLCAT DATA_DIR", file=sys.stderr)
        return 2
    toolcat, data = sys.argv[1], Path(sys.argv[2])
    checker = Checker(toolcat)
    with tempfile.TemporaryDirectory() as work:
        catalogs: list[tuple[str, Path | None]] = [("reference", None)]
        for label, kind, source in [
            ("github-toolsnaps", "github-toolsnaps", data / "github-mcp-server" / "toolsnaps"),
            ("livemcpbench", "livemcpbench", data / "livemcpbench" / "tools.json"),
        ]:
            path = Path(work) / f"{label}.toml"
            with open(path, "w") as out:
                subprocess.run([toolcat, "import", "--from", kind, str(source)], stdout=out,
                               stderr=subprocess.DEVNULL, check=True)
            catalogs.append((label, path))
        for label, path in catalogs:
            checker.catalog(label, path)
    checker.plans()
    for failure in checker.failures:
        print(f"FAIL {failure}", file=sys.stderr)
    print(f"provider SDK checks: {len(checker.failures)} failures")
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
