"""Diagnostics as a JUnit XML report, the format CI systems (GitLab, Jenkins,
Azure Pipelines, test-report actions) show as a test run.

One test suite, one test case per input file: a file with errors fails
(one <failure> per error, carrying its code, position and message), a file
with only warnings passes and lists them in <system-out>.  Built with the
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
    failures = sum(1 for f in names if any(d.is_error for d in by_file[f]))
    suites = ET.Element("testsuites", name="intentc", tests=str(len(names)), failures=str(failures), errors="0")
    suite = ET.SubElement(suites, "testsuite", name=SUITE, tests=str(len(names)), failures=str(failures),
                          errors="0", skipped="0")
    for name in names:
        case = ET.SubElement(suite, "testcase", classname=SUITE, name=name, file=name)
        for d in by_file[name]:
            if d.is_error:
                failure = ET.SubElement(case, "failure", type=d.code,
                                        message=f"{d.span.line}:{d.span.column}: {d.code}: {d.message}")
                failure.text = _line(d)
        notes = [_line(d) for d in by_file[name] if d.severity is not Severity.ERROR]
        if notes:
            ET.SubElement(case, "system-out").text = "\n".join(notes)
    ET.indent(suites)
    body = ET.tostring(suites, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
