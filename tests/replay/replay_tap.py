"""The TAP lines of the replay tests written in python: tap() prints one
check as "ok - WHAT" or "not ok - WHAT" (flushed, so that a long run shows
its progress), failed() says how many failed so far."""

_failed = 0


def tap(ok, what):
    global _failed
    print(("ok" if ok else "not ok") + " - " + what, flush=True)
    if not ok:
        _failed += 1


def failed():
    return _failed
