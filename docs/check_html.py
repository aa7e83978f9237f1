#!/usr/bin/env python3
"""Checks the API reference as a reader sees it: the HTML that Doxygen wrote.

Doxygen's own warnings (the test runs it with WARN_AS_ERROR) catch a public name without a
doc comment or a broken reference, not a page that renders wrong. This script reads the
generated pages and fails on three kinds of defect:

- members: a class page lacks a member the class has (one it inherits from a base that the
  reference leaves out, for instance). The classes and members are listed in REQUIRED below;
  a class page whose own description names a member function, as `name()`, that is not on the
  page fails too.
- briefs: a brief description cut short. With JAVADOC_AUTOBRIEF the brief ends at the first
  period followed by a space, so "(e.g. a kernel's output)" leaves a brief ending in "(e.g.";
  a brief that ends in an abbreviation, or opens more parentheses than it closes, fails.
- Markdown: the README (the main page) and docs/*.md pages where Doxygen's Markdown went
  wrong: a literal `{{` or a stray backtick in running text, typographic quotes ‘ ’ where a
  code span was written (Doxygen reads `text' as a quotation), a code span that holds only
  punctuation or starts with a space (the spans shifted by one backtick).

usage: check_html.py HTML_DIR
       check_html.py --doxygen DOXYGEN DOXYFILE HTML_DIR   (runs Doxygen first; fails if it does)

Every failure names the page and what is wrong; the exit status is 1 if there is any.
"""
import html
import html.parser
import pathlib
import re
import subprocess
import sys

# Class pages and the members each must show (its own or inherited ones). The names are the
# public members in the headers; a class that gains or loses one updates its row.
COLLECTIVES = ["all_reduce", "all_gather", "all_gather_v", "reduce_scatter", "reduce_scatter_block",
               "broadcast", "send", "recv", "sendrecv", "start_sendrecv", "barrier", "create_group",
               "rank", "size"]
REQUIRED = {
    # The one array type: ShardedMatrix, ShardedTensor and ShardedActivation are its aliases.
    "classshardwise_1_1DistributedArray.html":
        ["rows", "cols", "local_rows", "local_cols", "row_offset", "col_offset", "extents", "extent",
         "local_extents", "offsets", "stride", "local_strides", "data", "local", "release", "released",
         "distribute", "scatter", "generate", "from_local", "to_global", "groups", "valid", "agree",
         "batch", "seq", "model", "local_tokens", "reshape"],
    "classshardwise_1_1AnyCommunicator.html": COLLECTIVES + ["target"],
    "classshardwise_1_1MpiCommunicator.html": COLLECTIVES,
    "classshardwise_1_1VirtualCommunicator.html": COLLECTIVES,
    "classshardwise_1_1CountingCommunicator.html": COLLECTIVES,
}

# A brief that ends in one of these was cut at the period of an abbreviation.
CUT_BRIEF = re.compile(r"(?:\b(?:e\.g|i\.e|etc|cf|vs|resp|approx|incl|esp|Fig|No)\.?|\bvs|\betc)\s*$", re.I)


class Page(html.parser.HTMLParser):
    """The parts of one Doxygen page that the checks read."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []              # open elements: (tag, class)
        self.members = set()         # names in the member tables (memItemRight / memTemplItemRight)
        self.briefs = []             # brief descriptions: mdescRight cells, desc cells, the page brief
        self.text = []               # (text, inside code?) of the page's textblocks, outside fragments
        self.codes = []              # contents of <code> elements within textblocks
        self.description = []        # text of the class's detailed description
        self._cell = None            # collecting: "member", "brief", "pagebrief"
        self._buf = []
        self._code = None
        self._depth_contents = None
        self._pagebrief_done = False
        self._details = False

    def _classes(self):
        return [c for _, c in self.stack]

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class") or ""
        if tag in ("br", "img", "hr", "input", "meta", "link", "area"):
            return
        self.stack.append((tag, cls))
        if tag == "td" and cls in ("memItemRight", "memTemplItemRight"):
            self._cell, self._buf = "member", []
        elif tag == "td" and cls in ("mdescRight", "desc"):
            self._cell, self._buf = "brief", []
        elif tag == "div" and cls == "contents":
            self._depth_contents = len(self.stack)
        elif (tag == "p" and self._depth_contents == len(self.stack) - 1 and not self._pagebrief_done
              and self._cell is None):
            self._cell, self._buf = "pagebrief", []
        elif tag == "code" and self._in_textblock():
            self._code = []
        if tag == "a" and a.get("id") == "details":
            self._details = True

    def handle_endtag(self, tag):
        # Pop to the matching element (Doxygen's HTML is well nested, but be lenient).
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                t, cls = self.stack[i]
                del self.stack[i:]
                break
        else:
            return
        if tag == "td" and self._cell in ("member", "brief"):
            text = "".join(self._buf)
            if self._cell == "member":
                m = re.match(r"\s*~?(\w+)", text)
                if m:
                    self.members.add(m.group(1))
            else:
                self.briefs.append(re.sub(r"\s*More\.\.\.\s*$", "", text))
            self._cell = None
        elif tag == "p" and self._cell == "pagebrief":
            self.briefs.append(re.sub(r"\s*More\.\.\.\s*$", "", "".join(self._buf)))
            self._cell = None
            self._pagebrief_done = True
        elif tag == "code" and self._code is not None:
            self.codes.append("".join(self._code))
            self._code = None

    def _in_textblock(self):
        classes = self._classes()
        return "textblock" in classes and "fragment" not in classes and not any(
            t == "pre" for t, _ in self.stack)

    def handle_data(self, data):
        if self._cell is not None:
            self._buf.append(data)
        if self._code is not None:
            self._code.append(data)
        if self._in_textblock():
            self.text.append((data, any(t == "code" for t, _ in self.stack)))
            if self._details:
                self.description.append(data)


def read(path):
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def check_members(root, name, page, wanted, errors):
    missing = [m for m in wanted if m not in page.members]
    if missing:
        errors.append(f"{name}: members missing from the class page: {', '.join(missing)} "
                      f"(an inherited member from a base the reference leaves out?)")


# Names a class's description may mention as `f()` without the page listing them: what() of
# the exception classes is std::exception's.
NAMED_ELSEWHERE = {"what"}


def check_named_members(root, name, page, errors):
    """Member functions a class's own description names as `f()` must be on its page (or, for
    a nested class, on its enclosing class's page)."""
    text = "".join(page.description)
    named = set(re.findall(r"(?<![\w:.>])([a-z_][a-z0-9_]*)\(\)", text))
    known = page.members | NAMED_ELSEWHERE
    parts = re.sub(r"^(class|struct)", "", name[:-len(".html")]).split("_1_1")
    if len(parts) > 2:  # shardwise, the enclosing class, this one
        for kind in ("class", "struct"):
            path = root / f"{kind}{'_1_1'.join(parts[:-1])}.html"
            if path.exists():
                known |= read(path).members
    absent = sorted(n for n in named if n not in known)
    if absent:
        errors.append(f"{name}: the description names {', '.join(a + '()' for a in absent)}, "
                      f"which the page does not list as members")


def check_briefs(name, page, errors):
    seen = set()
    for brief in page.briefs:
        b = " ".join(brief.split())
        if not b or b in seen:
            continue
        seen.add(b)
        if CUT_BRIEF.search(b):
            errors.append(f"{name}: brief cut short at an abbreviation: \"{b}\" "
                          f"(JAVADOC_AUTOBRIEF ends the brief at a period and a space: write \"e.g.\\ \" or reword)")
        elif b.count("(") > b.count(")"):
            errors.append(f"{name}: brief cut short inside parentheses: \"{b}\"")


def check_markdown(name, page, errors):
    prose = "".join(t if not in_code else " " for t, in_code in page.text)
    for pattern, what in ((r"\{\{", "a literal \"{{\""), (r"\}\}", "a literal \"}}\""),
                          (r"`", "a stray backtick"), (r"[‘’]", "a typographic quote ‘ ’")):
        for m in re.finditer(pattern, prose):
            context = " ".join(prose[max(0, m.start() - 50):m.end() + 50].split())
            errors.append(f"{name}: {what} in running text, where a code span was written: \"...{context}...\"")
            break
    for code in page.codes:
        if code and (re.fullmatch(r"[\s.,;:]+", code) or code[0].isspace() or code[-1].isspace()):
            errors.append(f"{name}: a code span that looks shifted (Markdown backticks paired wrongly): "
                          f"<code>{html.escape(code)}</code>")


def check(root):
    errors = []
    pages = sorted(root.glob("*.html"))
    if not pages:
        return [f"{root}: no HTML pages (did Doxygen run?)"]
    names = {p.name for p in pages}
    for want in REQUIRED:
        if want not in names:
            errors.append(f"{want}: the class page does not exist")
    for path in pages:
        if path.name.endswith("_source.html") or path.name.endswith("-members.html"):
            continue
        page = read(path)
        check_briefs(path.name, page, errors)
        if path.name in REQUIRED:
            check_members(root, path.name, page, REQUIRED[path.name], errors)
        if path.name.startswith(("class", "struct")):
            check_named_members(root, path.name, page, errors)
        if path.name == "index.html" or path.name.startswith("md_"):
            check_markdown(path.name, page, errors)
    return errors


def main(argv):
    if len(argv) == 5 and argv[1] == "--doxygen":
        run = subprocess.run([argv[2], argv[3]])
        if run.returncode != 0:
            print(f"check_html.py: doxygen failed (exit status {run.returncode})", file=sys.stderr)
            return 1
        root = pathlib.Path(argv[4])
    elif len(argv) == 2:
        root = pathlib.Path(argv[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    errors = check(root)
    for e in errors:
        print(f"docs: {e}", file=sys.stderr)
    if errors:
        print(f"check_html.py: {len(errors)} defect(s) in the HTML under {root}", file=sys.stderr)
        return 1
    print(f"check_html.py: {len(list(root.glob('*.html')))} pages checked under {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
