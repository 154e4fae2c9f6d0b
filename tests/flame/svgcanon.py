#!/usr/bin/env python3
"""Canonical form of an evalprof SVG, for golden comparisons.

Parses the file as XML (so a malformed SVG fails here), then prints one
line per element: its depth, tag, attributes in sorted order and its text.
The embedded script's body is left out (it is tested in the browser), so
goldens change only when the picture does.

usage: svgcanon.py FILE.svg
"""
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def walk(el, depth, out):
    tag = el.tag.replace(SVG, "")
    attrs = " ".join(f'{k}="{v}"' for k, v in sorted(el.attrib.items()))
    text = (el.text or "").strip()
    if tag == "script":
        text = "(script)"
    out.append(f"{depth} {tag} {attrs} | {text}".rstrip())
    for child in el:
        walk(child, depth + 1, out)


def main(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        sys.exit(f"svgcanon: {path}: not well-formed XML: {e}")
    out = []
    walk(root, 0, out)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
