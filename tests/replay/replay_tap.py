"""The TAP lines of the replay tests written in python: tap() prints one
check as "ok - WHAT" or "not ok - WHAT" (flushed, so that a long run shows
its progress) and, when it failed, DIAG's lines as "#   " comments;
failed() says how many failed so far."""

_failed = 0


def tap(ok, what, diag=""):
    global _failed
    print(("ok" if ok else "not ok") + " - " + what, flush=True)
    if not ok:
        _failed += 1
        for line in str(diag).splitlines():
            print("#   " + line, flush=True)


def failed():
    return _failed
