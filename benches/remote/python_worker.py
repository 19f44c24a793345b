"""One Python worker process for benches/remote.rs: the client's ``Worker`` with
``concurrency`` (argv[3], default 64) running a no-op handler for ``remote`` tasks
against the API at argv[1] with the token argv[2]. It prints ``ready`` once the worker
runs, and stops (``Worker.stop``) when its stdin closes. With TASKLANE_BENCH_PROFILE set
to a path, it writes a cProfile of every thread there at the end."""

import sys
import threading

import tasklane


def main() -> None:
    url, token = sys.argv[1], sys.argv[2]
    concurrency = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    profile_to = __import__("os").environ.get("TASKLANE_BENCH_PROFILE")
    profiles = []
    if profile_to:
        import cProfile

        def profiled(frame, event, arg):  # every thread started after this
            profile = cProfile.Profile()
            profiles.append(profile)
            profile.enable()

        threading.setprofile(profiled)
    client = tasklane.Tasklane(url, token)
    worker = tasklane.Worker(client, ["remote"], lambda ctx: {}, concurrency=concurrency, wait_seconds=1)
    sizes = []
    if __import__("os").environ.get("TASKLANE_BENCH_TRACE"):
        claim = worker._claim

        def traced(free):
            claimed = claim(free)
            sizes.append((free, len(claimed.tasks)))
            return claimed

        worker._claim = traced
    worker.start()
    print("ready", flush=True)
    sys.stdin.read()
    worker.stop(timeout=10)
    client.close()
    busy = [s for s in sizes if s[1]]
    if busy:
        print(f"claims with tasks: {len(busy)}, mean max {sum(f for f, _ in busy) / len(busy):.1f}, "
              f"mean claimed {sum(n for _, n in busy) / len(busy):.1f}", file=sys.stderr)
    if profile_to:
        import pstats

        stats = None
        for profile in profiles:
            profile.disable()
            stats = pstats.Stats(profile) if stats is None else stats.add(profile)
        if stats is not None:
            stats.dump_stats(profile_to)


if __name__ == "__main__":
    main()
