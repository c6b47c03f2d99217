"""`intentc remote compile|fetch`: compile on (or fetch from) a compile service.

Exit codes as everywhere: 1 for diagnostics (printed like a local compile) or input over the
server's limits, 2 for bad usage or a refused token, 3 when the server fails or is unreachable.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .common import EXIT_INPUT_ERROR, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, UsageError, read_text, report
from .specialize import parse_define, parse_extents

TOKEN_ENVIRONMENT = "INTENTC_TOKEN"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("remote", help="compile on a compile service (intentc serve)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    compile_ = actions.add_parser("compile", help="compile FILE on the server, write its artifacts")
    compile_.add_argument("file", metavar="FILE", help="a .kir file (- for stdin)")
    compile_.add_argument("--kernel", required=True, metavar="NAME", help="the kernel (without @)")
    compile_.add_argument("--target", required=True, metavar="TARGET", help="a target the server has")
    compile_.add_argument("--arch", metavar="ARCH", help="the target's arch (sm_80, ...)")
    compile_.add_argument("-O", dest="opt_level", type=int, choices=range(4), default=2, help="opt level (default 2)")
    compile_.add_argument("--numerics", choices=("source", "relaxed_normalization"), default="source")
    compile_.add_argument("--no-online-reduction", action="store_true", help="disable the online-reduction rewrite")
    compile_.add_argument("--pipeline", metavar="PASSES", help="a pass pipeline (default: the target's)")
    compile_.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                          help="a constexpr value")
    compile_.add_argument("--extent", action="append", default=[], metavar="NAME=N", help="fix a dynamic extent")
    compile_.add_argument("--unit-stride", action="append", default=[], metavar="PARAM",
                          help="the view's innermost stride is 1")
    compile_.add_argument("--aligned16", action="append", default=[], metavar="PARAM",
                          help="the view's base is 16-byte aligned")
    compile_.add_argument("--variant-for", metavar="NAME=N",
                          help="ptx, cubin: only the register-form variant serving launches where the dynamic extent "
                               "NAME is N (the bucket comes from the server's launch.json variant_rule)")
    compile_.add_argument("--eager-variants", action="store_true",
                          help="ptx, cubin: the module holding variants for a consumer that cannot compile")
    fetch = actions.add_parser("fetch", help="write the artifacts of a cache key")
    fetch.add_argument("key", metavar="KEY", help="a key printed by `remote compile`")
    for action in (compile_, fetch):
        action.add_argument("--server", required=True, metavar="URL", help="e.g. http://127.0.0.1:8080")
        action.add_argument("-o", "--output-dir", type=Path, default=Path("."), metavar="DIR",
                            help="where to write the artifacts (default .)")
        action.add_argument("--retries", type=int, default=5, metavar="N", help="retries when overloaded (default 5)")
    p.set_defaults(run=run)


def run(args) -> int:
    try:
        from ..client import Client, CompileFailed, RemoteError
        import httpx
    except ImportError as error:
        raise UsageError(f"remote needs the `server` extra: pip install 'intentc[server]' ({error})") from None
    token = os.environ.get(TOKEN_ENVIRONMENT)
    try:
        with Client(args.server, token=token, retries=args.retries) as client:
            reply = _compile(client, args) if args.action == "compile" else client.entry(args.key)
    except CompileFailed as error:
        report(error)
        return EXIT_INPUT_ERROR
    except RemoteError as error:
        print(f"intentc: {args.server}: {error}", file=sys.stderr)
        if error.status in (401, 403):
            return EXIT_USAGE
        return EXIT_INPUT_ERROR if error.status in (413, 422) else EXIT_INTERNAL
    except httpx.HTTPError as error:
        print(f"intentc: cannot reach {args.server}: {error}", file=sys.stderr)
        return EXIT_INTERNAL
    print(f"{reply.key} {reply.status}")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for name, content in reply.artifacts.items():
        path = args.output_dir / Path(name).name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        print(path)
    return EXIT_OK


def _compile(client, args):
    text = read_text(args.file)
    options = {"opt_level": args.opt_level, "numerics": args.numerics,
               "online_reduction": not args.no_online_reduction, "pipeline": args.pipeline}
    specialization = {"constexprs": dict(parse_define(d) for d in args.defines),
                      "extents": parse_extents(args.extent),
                      "unit_stride": args.unit_stride, "aligned16": args.aligned16,
                      "lazy_variants": not args.eager_variants}
    reply = client.compile(text, args.kernel, args.target, args.arch, options, specialization, file=args.file)
    if not args.variant_for:
        return reply
    # the bucket the kernel's rule gives the row length, then that variant alone
    from ..codegen.nvptx.variants import VariantRule
    ((name, value),) = parse_extents([args.variant_for], "--variant-for").items()
    rule = json.loads(reply.artifacts.get("launch.json", "{}")).get("variant_rule")
    bucket = VariantRule(**rule).bucket(value) if rule and rule["extent"] == name else None
    if bucket is None:
        raise UsageError(f"--variant-for {name}={value}: no register-form variant of @{args.kernel} serves it "
                         f"(launch.json variant_rule: {rule or 'none'})")
    return client.compile(text, args.kernel, args.target, args.arch, options,
                          {**specialization, "variant": list(bucket)}, file=args.file)

