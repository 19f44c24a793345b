"""The fenced code blocks of one section of a Markdown document, as written, so a test can
run a document's examples and fail when they drift from the code.

    doc-blocks.py DOC SECTION LANG [URL TOKEN]

prints the blocks fenced as LANG under the `## SECTION` heading (up to the next `## `),
one after the other, each followed by an empty line. With URL and TOKEN, the example
server address `http://127.0.0.1:8080` and token `tl_...` are replaced by them, and
nothing else is changed. Exits non-zero when the section has no such block, or when a
substitution was asked for and the blocks name neither placeholder.
"""

import re
import sys


def blocks(text: str, section: str, lang: str) -> list[str]:
    match = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not match:
        sys.exit(f"no section '## {section}'")
    return re.findall(rf"^```{re.escape(lang)}\n(.*?)^```$", match.group(1), re.M | re.S)


def main() -> None:
    doc, section, lang, *subst = sys.argv[1:]
    found = blocks(open(doc, encoding="utf-8").read(), section, lang)
    if not found:
        sys.exit(f"no ```{lang} block under '## {section}' in {doc}")
    code = "\n".join(found)
    if subst:
        url, token = subst
        if "http://127.0.0.1:8080" not in code or '"tl_..."' not in code:
            sys.exit(f"the ```{lang} blocks under '## {section}' name no server or token")
        code = code.replace("http://127.0.0.1:8080", url).replace('"tl_..."', f'"{token}"')
    sys.stdout.write(code)


if __name__ == "__main__":
    main()
