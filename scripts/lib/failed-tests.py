#!/usr/bin/env python3
"""Print the output of the tests that did not pass, from meson's testlog.json.

test.sh prints it after the whole log, so the end of a CI log (often all that
is kept) shows why each failing test failed, not only the last test's output.
"""
import json
import sys

TAIL = 150      # lines of each stream kept per failing test


def tail(text, n=TAIL):
    lines = (text or '').splitlines()
    cut = len(lines) - n
    head = ['... (%d earlier lines in testlog.txt)' % cut] if cut > 0 else []
    return '\n'.join(head + lines[-n:])


def main(path):
    bad = []
    with open(path) as f:
        for line in f:
            t = json.loads(line)
            if t.get('result') not in ('OK', 'SKIP', 'EXPECTEDFAIL'):
                bad.append(t)
    for t in bad:
        print('=' * 78)
        print('FAILED: %s (%s, %.1f s, exit %s)' % (
            t.get('name'), t.get('result'), t.get('duration', 0),
            t.get('returncode')))
        print('command: %s' % ' '.join(t.get('command', [])))
        for stream in ('stdout', 'stderr'):
            if t.get(stream):
                print('-' * 30 + ' ' + stream + ' ' + '-' * 30)
                print(tail(t[stream]))
    print('=' * 78)
    print('%d test(s) did not pass: %s' % (
        len(bad), ', '.join(t.get('name', '?') for t in bad)))


if __name__ == '__main__':
    main(sys.argv[1])
