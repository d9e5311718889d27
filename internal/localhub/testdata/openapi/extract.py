#!/usr/bin/env python3
"""Extract, from @octokit/openapi's api.github.com description, the success
response schemas of the REST operations backflow's GitHub adapter uses,
converted from OpenAPI 3.0 to JSON Schema: nullable becomes a "null" type,
and the components they refer to become "$defs" (the package's dereferenced
file is not used: its dereferencing turns some anyOf into allOf).
Usage: extract.py package/generated/api.github.com.json > responses.json
"""
import json
import sys

OPERATIONS = [
    ("get", "/app"),
    ("get", "/app/installations"),
    ("post", "/app/installations/{installation_id}/access_tokens"),
    ("get", "/installation/repositories"),
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/installation"),
    ("get", "/repos/{owner}/{repo}/contents/{path}"),
    ("get", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("post", "/repos/{owner}/{repo}/git/refs"),
    ("patch", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("post", "/repos/{owner}/{repo}/git/trees"),
    ("get", "/repos/{owner}/{repo}/git/trees/{tree_sha}"),
    ("post", "/repos/{owner}/{repo}/git/commits"),
    ("get", "/repos/{owner}/{repo}/git/commits/{commit_sha}"),
    ("get", "/repos/{owner}/{repo}/compare/{basehead}"),
    ("get", "/repos/{owner}/{repo}/pulls"),
    ("post", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("patch", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("put", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"),
    ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers"),
    ("get", "/repos/{owner}/{repo}/issues"),
    ("post", "/repos/{owner}/{repo}/issues"),
    ("patch", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("delete", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"),
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("post", "/app-manifests/{code}/conversions"),
]

DROP = {"discriminator", "example", "examples", "xml", "externalDocs", "deprecated", "readOnly", "writeOnly"}


def convert(s):
    if isinstance(s, list):
        return [convert(x) for x in s]
    if not isinstance(s, dict):
        return s
    out = {}
    for k, v in s.items():
        if k in DROP or k.startswith("x-"):
            continue
        if k in ("properties", "patternProperties"):
            out[k] = {name: convert(sub) for name, sub in v.items()}
        elif k == "$ref":
            out[k] = v.replace("#/components/schemas/", "#/$defs/")
        else:
            out[k] = convert(v)
    if out.pop("nullable", False):
        t = out.get("type")
        if isinstance(t, str):
            out["type"] = [t, "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = out["enum"] + [None]
        elif t is None:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def refs(s, found):
    if isinstance(s, list):
        for x in s:
            refs(x, found)
    elif isinstance(s, dict):
        for k, v in s.items():
            if k == "$ref" and isinstance(v, str):
                found.add(v.rsplit("/", 1)[1])
            else:
                refs(v, found)


def resolve(spec, x):
    """A response (or response $ref) to its object."""
    if "$ref" in x:
        kind, name = x["$ref"].split("/")[-2:]
        return spec["components"][kind][name]
    return x


# FIXES are the places where the description contradicts itself, each
# corrected to what the description says elsewhere. GET /app/installations
# inlines the installation's account as allOf [simple-user, enterprise],
# which no account satisfies; components/schemas/installation, the same
# object, has anyOf.
FIXES = [
    ("GET /app/installations", ["items", "properties", "account"], "allOf", "anyOf"),
]


def fix(op, schema):
    for name, path, old, new in FIXES:
        if name != op:
            continue
        node = schema
        for key in path:
            node = node[key]
        node[new] = node.pop(old)


def main():
    spec = json.load(open(sys.argv[1]))
    ops = []
    for method, path in OPERATIONS:
        op = spec["paths"][path][method]
        for status, resp in sorted(op["responses"].items()):
            if not status.startswith("2"):
                continue
            schema = resolve(spec, resp).get("content", {}).get("application/json", {}).get("schema")
            if schema is None:
                continue
            name = method.upper() + " " + path
            schema = json.loads(json.dumps(schema))
            fix(name, schema)
            ops.append({"operation": name, "status": status, "schema": convert(schema)})
    defs, todo = {}, set()
    refs(ops, todo)
    while todo:
        name = todo.pop()
        if name in defs:
            continue
        defs[name] = convert(spec["components"]["schemas"][name])
        more = set()
        refs(defs[name], more)
        todo |= more - set(defs)
    json.dump({"source": "@octokit/openapi " + spec["info"]["version"], "$defs": defs, "operations": ops}, sys.stdout, sort_keys=True, separators=(",", ":"))


main()
