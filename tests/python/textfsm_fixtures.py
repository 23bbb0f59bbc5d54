"""Python textfsm, Google's reference implementation, on the fixtures and
texts serialgate parses: the other side of the comparison in
tests/testsuite/textfsm_fixtures.rs and parsed_output.rs.

Usage:
  textfsm_fixtures.py fixtures TEMPLATES_DIR FIXTURES_DIR
      every tests/<platform>/<command>/*.raw of ntc-templates, the template
      chosen by the index as ntc-templates' own test does (the command is
      the folder's name with spaces for underscores); prints one JSON
      object per line: {"fixture", "platform", "command", "expected",
      "python", "error"}.
  textfsm_fixtures.py text TEMPLATES_DIR PLATFORM COMMAND < TEXT
      one text; prints {"python", "error"}.

Records are dicts keyed by the lowercased value names, as ntc-templates'
parse_output and Netmiko's use_textfsm give them.
"""

import json
import os
import sys

import yaml
from textfsm import clitable

# libyaml when PyYAML has it: the fixtures load in a third of the time.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse(table, platform, command, text):
    """The records python textfsm makes of `text`, or an error."""
    try:
        table.ParseCmd(text, {"Command": command, "Platform": platform})
    except Exception as e:  # noqa: BLE001 - every failure is a result here
        return None, f"{type(e).__name__}: {e}"
    header = [h.lower() for h in table.header]
    return [dict(zip(header, row)) for row in table], None


def fixtures(templates, root):
    table = clitable.CliTable("index", templates)
    for platform in sorted(os.listdir(root)):
        pdir = os.path.join(root, platform)
        if not os.path.isdir(pdir):
            continue
        for folder in sorted(os.listdir(pdir)):
            cdir = os.path.join(pdir, folder)
            for name in sorted(os.listdir(cdir)):
                if not name.endswith(".raw"):
                    continue
                raw = os.path.join(cdir, name)
                yml = raw[:-4] + ".yml"
                if not os.path.exists(yml):
                    continue
                with open(raw, encoding="utf-8") as f:
                    text = f.read()
                with open(yml, encoding="utf-8") as f:
                    expected = (yaml.load(f, Loader=LOADER) or {}).get("parsed_sample")
                command = " ".join(folder.split("_"))
                records, error = parse(table, platform, command, text)
                print(json.dumps({
                    "fixture": os.path.relpath(raw, root),
                    "platform": platform,
                    "command": command,
                    "expected": expected,
                    "python": records,
                    "error": error,
                }))


def one_text(templates, platform, command):
    table = clitable.CliTable("index", templates)
    records, error = parse(table, platform, command, sys.stdin.read())
    print(json.dumps({"python": records, "error": error}))


def main():
    if sys.argv[1] == "fixtures":
        fixtures(sys.argv[2], sys.argv[3])
    else:
        one_text(sys.argv[2], sys.argv[3], sys.argv[4])


if __name__ == "__main__":
    main()
