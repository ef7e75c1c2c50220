"""Diagnostics as a JUnit XML report, the format CI systems (GitLab, Jenkins,
Azure Pipelines, test-report actions) show as a test run.

One test suite.  Every error is a failed test case of its own (named by
file, position and code, its <failure> carrying the code, position and
message), and every input file without errors is one passing test case, so
`failures` counts findings, as a reader of the report counts them (a file
with 9 errors is 9 failures, not 1), and `tests` and `failures` on
<testsuites> and <testsuite> are the <testcase> and <failure> elements there
are.  A file's warnings and notes are listed in the <system-out> of its
first test case.  Built with the
standard library's ElementTree, which escapes the text; the output has no
timestamps or durations, so the same inputs give the same bytes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import Sequence

from intentc.diagnostics import Diagnostic, Severity

SUITE = "intentc check"


def _line(d: Diagnostic) -> str:
    hint = f" (hint: {d.hint})" if d.hint else ""
    return f"{d.span}: {d.severity.value}[{d.code}]: {d.message}{hint}"


def format_junit(diags: Sequence[Diagnostic], files: Sequence[str]) -> str:
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for d in diags:
        by_file[d.span.file].append(d)
    names = sorted(set(files) | set(by_file))
    errors = [d for f in names for d in by_file[f] if d.is_error]
    tests = len(errors) + sum(1 for f in names if not any(d.is_error for d in by_file[f]))
    counts = {"tests": str(tests), "failures": str(len(errors)), "errors": "0"}
    suites = ET.Element("testsuites", {"name": "intentc", **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": SUITE, **counts, "skipped": "0"})
    for name in names:
        found = by_file[name]
        cases = []
        for d in (d for d in found if d.is_error):
            case = ET.SubElement(suite, "testcase", classname=SUITE,
                                 name=f"{name}:{d.span.line}:{d.span.column} {d.code}", file=name,
                                 line=str(d.span.line))
            failure = ET.SubElement(case, "failure", type=d.code,
                                    message=f"{d.span.line}:{d.span.column}: {d.code}: {d.message}")
            failure.text = _line(d)
            cases.append(case)
        if not cases:
            cases.append(ET.SubElement(suite, "testcase", classname=SUITE, name=name, file=name))
        notes = [_line(d) for d in found if d.severity is not Severity.ERROR]
        if notes:
            ET.SubElement(cases[0], "system-out").text = "\n".join(notes)
    ET.indent(suites)
    body = ET.tostring(suites, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
