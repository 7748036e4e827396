#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Checks README.md and docs/*.md; prints TAP lines ("ok - ..." /
"not ok - ...", diagnostics as "#   ..." lines).

- every relative link (and image) resolves to a file or directory of the
  repository, and a #fragment to a heading of the file it names;
- no link leaves the repository: no absolute path, no file: URL, no
  relative path above the repository's root, no URL of a local host, and
  no text names ../shared/ or /work/;
- the README's table of contents ("## Contents") lists its ## and ###
  headings, in order, each with its anchor;
- NFR-1, NFR-2 and NFR-3 are defined in the README ("**NFR-N**: ..."), and
  in README.md and every docs/*.md the first mention of each is its
  definition;
- docs/ARCHITECTURE.md names every source file of bpf/, include/ and
  user/ (.c, .h) in a code span: its path from the repository
  (`user/sync/engine.c`), from user/ (`sync/engine.c`), its bare name
  (`engine.c`) or a glob over names (`redis*.c`); under user/ a NAME.h
  beside a NAME.c is its interface and is named with it; and the bpf/
  and include/ lists name no file twice.

Usage: docs_check.py [REPO_ROOT]   (default: two levels above this file)
"""
import fnmatch
import os
import re
import sys
from urllib.parse import urlsplit, unquote

FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
AUTOLINK = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.-]*:[^\s>]+)>")
CODESPAN = re.compile(r"(`+)(?:.+?)\1", re.S)
LOCAL_HOSTS = re.compile(r"^(localhost|127\.\d+\.\d+\.\d+|0\.0\.0\.0|\[?::1\]?|"
                         r"10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+|"
                         r"172\.(1[6-9]|2\d|3[01])\.\d+\.\d+)$", re.I)
NFR_DEF = "**NFR-%d**:"


def prose_lines(text):
    """(line number, line) outside fenced and indented code blocks (an
    indented block: lines indented 4 or more, after a blank line)."""
    fenced = indented = False
    prev_blank = True
    for no, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            prev_blank = False
            continue
        if fenced:
            continue
        blank = not line.strip()
        if not blank and line.startswith(("    ", "\t")) and (prev_blank or indented):
            indented = True
            continue
        if not blank:
            indented = False
        prev_blank = blank
        yield no, line


def slug(text, seen):
    s = re.sub(r"`", "", text)
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)     # links: their text
    s = s.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    s = s.replace(" ", "-")
    base, n = s, seen.get(s, 0)
    if n:
        s = "%s-%d" % (base, n)
    seen[base] = n + 1
    return s


def headings(text):
    """[(level, text, anchor)] of the ATX headings outside code."""
    seen, out = {}, []
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if m:
            out.append((len(m.group(1)), m.group(2), slug(m.group(2), seen)))
    return out


def links(text):
    """[(line number, target)] of the links outside code."""
    out = []
    for no, line in prose_lines(text):
        bare = CODESPAN.sub("", line)
        for rx in (LINK, AUTOLINK):
            out += [(no, m.group(1)) for m in rx.finditer(bare)]
        m = REFDEF.match(bare)
        if m:
            out.append((no, m.group(1)))
    return out


class Tap:
    def __init__(self):
        self.failed = 0

    def check(self, ok, what, diag=()):
        print("%s - %s" % ("ok" if ok else "not ok", what))
        if not ok:
            self.failed += 1
            for d in diag:
                print("#   %s" % d)


def main():
    root = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else
                            os.path.join(os.path.dirname(__file__), "..", ".."))
    tap = Tap()
    readme = os.path.join(root, "README.md")
    docs_dir = os.path.join(root, "docs")
    files = [readme] + sorted(os.path.join(docs_dir, f)
                              for f in os.listdir(docs_dir) if f.endswith(".md"))
    texts = {f: open(f, encoding="utf-8").read() for f in files}
    anchors = {}

    def anchors_of(path):
        if path not in anchors:
            try:
                anchors[path] = {a for _, _, a in
                                 headings(open(path, encoding="utf-8").read())}
            except OSError:
                anchors[path] = set()
        return anchors[path]

    broken, leaving, count = [], [], 0
    for f in files:
        rel_f = os.path.relpath(f, root)
        for no, target in links(texts[f]):
            count += 1
            where = "%s:%d: %s" % (rel_f, no, target)
            u = urlsplit(target)
            if u.scheme:
                if u.scheme not in ("http", "https", "mailto"):
                    leaving.append(where + " (a %s: link)" % u.scheme)
                elif u.scheme != "mailto" and LOCAL_HOSTS.match(u.hostname or ""):
                    leaving.append(where + " (a local host)")
                continue
            if target.startswith("//") or u.path.startswith("/"):
                leaving.append(where + " (an absolute path)")
                continue
            path = os.path.realpath(os.path.join(os.path.dirname(f), unquote(u.path))) \
                if u.path else f
            if path != root and not path.startswith(root + os.sep):
                leaving.append(where + " (outside the repository)")
                continue
            if not os.path.exists(path):
                broken.append(where + " (no such file)")
                continue
            if u.fragment and path.endswith(".md") and \
                    u.fragment not in anchors_of(path):
                broken.append(where + " (no heading #%s in %s)" %
                              (u.fragment, os.path.relpath(path, root)))
    tap.check(not broken, "every relative link of README.md and docs/*.md "
              "(%d links) resolves to a file of the repository" % count, broken)
    named = ["%s:%d: %s" % (os.path.relpath(f, root), no, line.strip())
             for f in files
             for no, line in enumerate(texts[f].split("\n"), 1)
             if "../shared" in line or "/work/" in line]
    tap.check(not leaving and not named,
              "no link of README.md and docs/*.md leaves the repository",
              leaving + named)

    # the table of contents
    text = texts[readme]
    m = re.search(r"^## Contents\n(.*?)(?=^#)", text, re.S | re.M)
    if not m:
        tap.check(False, "README.md has a table of contents (## Contents)")
    else:
        toc = re.findall(r"^(\s*)[-*] \[(.*)\]\(#([^)]*)\)\s*$", m.group(1), re.M)
        got = [(len(ind) // 2 + 2, t, a) for ind, t, a in toc]
        want = [h for h in headings(text) if h[0] in (2, 3) and h[1] != "Contents"]
        diag = []
        for i in range(max(len(got), len(want))):
            g = got[i] if i < len(got) else None
            w = want[i] if i < len(want) else None
            if g != w:
                diag.append("entry %d: contents %s, heading %s" % (i + 1, g, w))
                if len(diag) >= 5:
                    break
        tap.check(not diag, "README.md's contents list its %d ## and ### "
                  "headings in order, with their anchors" % len(want), diag)

    # NFR-1/2/3
    for n in (1, 2, 3):
        tag = "NFR-%d" % n
        diag = []
        if NFR_DEF % n not in texts[readme]:
            diag.append("README.md: no definition '%s ...'" % (NFR_DEF % n))
        for f in files:
            t = texts[f]
            i = t.find(tag)
            if i < 0:
                continue
            line = t[t.rfind("\n", 0, i) + 1:t.find("\n", i)]
            if (NFR_DEF % n) not in line:
                diag.append("%s:%d: first mention of %s is not its definition: %s" %
                            (os.path.relpath(f, root), t.count("\n", 0, i) + 1,
                             tag, line.strip()))
        tap.check(not diag, "%s is defined in README.md, and where first used "
                  "in README.md and docs/*.md" % tag, diag)

    # ARCHITECTURE.md: every source file of bpf/, include/ and user/
    arch_path = os.path.join(root, "docs", "ARCHITECTURE.md")
    arch = texts.get(arch_path)
    if arch is None:
        with open(arch_path, encoding="utf-8") as fh:
            arch = fh.read()
    spans = set(m.group(0).strip("`").strip() for m in CODESPAN.finditer(arch))
    globs = [t for t in spans if "*" in t]
    sources = []
    for top in ("bpf", "include", "user"):
        for d, _, names in os.walk(os.path.join(root, top)):
            sources += [os.path.relpath(os.path.join(d, n), root)
                        for n in names if n.endswith((".c", ".h"))]
    diag = []
    for rel in sorted(sources):
        name = os.path.basename(rel)
        forms = {rel, name}
        if rel.startswith("user/"):
            forms.add(rel[len("user/"):])
            if rel.endswith(".h") and rel[:-2] + ".c" in sources:
                rel_c = rel[:-2] + ".c"
                forms |= {rel_c, rel_c[len("user/"):], name[:-2] + ".c"}
        if not forms & spans and not any(fnmatch.fnmatchcase(name, g)
                                         for g in globs):
            diag.append("%s: not named in docs/ARCHITECTURE.md" % rel)
    tap.check(not diag, "docs/ARCHITECTURE.md names each of the %d source "
              "files of bpf/, include/ and user/" % len(sources), diag)
    # one folder's bullet list names a file once
    diag = []
    for m in re.finditer(r"\*\*(bpf|include)/\*\*.*?(?=\n\*\*|\Z)", arch, re.S):
        seen = {}
        for b in re.finditer(r"^- `([^`]+)`", m.group(0), re.M):
            seen[b.group(1)] = seen.get(b.group(1), 0) + 1
        diag += ["%s/%s: listed %d times" % (m.group(1), n, c)
                 for n, c in sorted(seen.items()) if c > 1]
    tap.check(not diag, "docs/ARCHITECTURE.md lists each file of bpf/ and "
              "include/ once", diag)
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
