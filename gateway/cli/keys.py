"""duet keys create|list|revoke: API keys in the store the config names (its keys file, or Redis
with ``state.store: redis`` / ``--state``). A new key is printed once; only its hash is kept."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from gateway.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("keys", help="create, list and revoke API keys")
    actions = parser.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="make a key (printed once)")
    create.add_argument("--name", required=True)
    create.add_argument("--tier", required=True)
    create.add_argument("--tenant", default="", help="whom the key's usage is reported under (duet usage --savings)")
    create.add_argument("--tasks", default="", metavar="TASK[,TASK...]",
                        help="the task types the key's application sends: its requests that name no task are "
                             "one of these (one: that task; several: the detector chooses among them)")
    actions.add_parser("list", help="key records (never the keys)")
    revoke = actions.add_parser("revoke", help="refuse a key from now on")
    revoke.add_argument("key_id")
    for action in (create, actions.choices["list"], revoke):
        action.add_argument("--config", required=True, help="duet.yaml")
        action.add_argument("--state", default=None, metavar="redis://...", help="as for duet serve")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from gateway.config import load_config
    from gateway.runtime import with_state_url

    try:
        config = with_state_url(load_config(args.config), args.state)
    except ConfigError as exc:
        print(f"duet keys: invalid config: {exc}", file=sys.stderr)
        return 2
    if args.action == "create" and args.tier not in config.access.tiers:
        print(f"duet keys: unknown tier '{args.tier}' (access.tiers defines {sorted(config.access.tiers)})", file=sys.stderr)
        return 2
    if args.action == "create":
        args.tasks = [t for t in (part.strip() for part in args.tasks.split(",")) if t]
        if unknown := [t for t in args.tasks if t not in config.policy.tasks]:
            print(f"duet keys: unknown task type(s) {unknown} (routing.tasks defines {sorted(config.policy.tasks)})",
                  file=sys.stderr)
            return 2
    return asyncio.run(_act(config, args))


async def _act(config: object, args: argparse.Namespace) -> int:
    from gateway.access.build import stores_for
    from gateway.access.keys import new_key
    from gateway.config.types import DuetConfig
    from gateway.state.redis.link import LinkSettings, RedisLink

    assert isinstance(config, DuetConfig)
    link = RedisLink(LinkSettings(config.state.redis_url, timeout_s=2.0)) if config.state.store == "redis" else None
    keys, _ = stores_for(config, link)
    try:
        if args.action == "create":
            secret, record = new_key(args.name, args.tier, time.time(), args.tenant, args.tasks)
            await keys.add(record)
            print(f"created {record.id} (name {record.name}, tier {record.tier}); the key, shown this once:")
            print(secret)
        elif args.action == "list":
            for key in await keys.load():
                created = time.strftime("%Y-%m-%d %H:%M", time.gmtime(key.created_at))
                tasks = ",".join(key.tasks) or "any task"
                print(f"{key.id}\t{key.name}\t{key.tier}\t{created}\t{'revoked' if key.revoked else 'active'}\t{tasks}")
        elif not await keys.revoke(args.key_id):
            print(f"duet keys: no key with id '{args.key_id}'", file=sys.stderr)
            return 1
        else:
            print(f"revoked {args.key_id}")
    finally:
        if link is not None:
            await link.aclose()
    return 0
