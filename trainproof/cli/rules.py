"""``trainproof rules [ID...]``: every rule id, level, threshold and meaning."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "rules",
        help="list every rule with its level, thresholds and meaning",
        description="List the rules. Name rule ids to see their full documentation.",
    )
    parser.add_argument("ids", nargs="*", metavar="ID", help="show the full documentation of these rules")
    parser.add_argument("--json", action="store_true", help="print the catalogue as JSON")
    parser.add_argument("--config", metavar="PATH", help="show the values this configuration file sets (default: the one found)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from trainproof.checks.registry import ALIASES, REMOVED, all_rules, by_id
    from trainproof.config import load
    from trainproof.io.errors import EXIT_OK, UsageError
    from trainproof.render import rules as catalogue

    chosen = list(all_rules())
    if args.ids:
        chosen = []
        for rule_id in args.ids:
            key = ALIASES.get(rule_id.upper(), rule_id.upper())
            if key in REMOVED:
                raise UsageError(f"{rule_id}: this rule was removed: {REMOVED[key]}")
            rule = by_id(key)
            if rule is None:
                raise UsageError(f"{rule_id}: no such rule (see 'trainproof rules')")
            chosen.append(rule)
    from trainproof.cli.common import write_stdout

    settings = load(args.config)
    write_stdout(catalogue.as_json(chosen, settings) if args.json else catalogue.text(chosen, settings, full=bool(args.ids)))
    return EXIT_OK
