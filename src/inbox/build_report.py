# The environment report of a built image (runtime/build_plan.cc, EnvironmentReportArgv): run in the
# built image as `python3 -B -c SCRIPT APT_PACKAGE...`; prints python's distributions and dpkg's
# versions of the apt packages asked for as one JSON line.
# (This header, the leading comment lines, is not embedded: cmake/embed_sources.cmake.)
import sys, json, importlib.metadata as m
apt = {}
try:
    for block in open('/var/lib/dpkg/status', encoding='utf-8', errors='replace').read().split('\n\n'):
        f = dict(l.split(': ', 1) for l in block.splitlines() if ': ' in l and not l.startswith(' '))
        if f.get('Status', '').endswith(' installed'):
            apt[f.get('Package', '')] = f.get('Version', '?')
except OSError:
    pass
names = [a.split('=')[0].split(':')[0] for a in sys.argv[1:]]
print(json.dumps({'python': sys.version.split()[0],
                  'packages': sorted({(d.metadata['Name'] or '?', d.version or '?') for d in m.distributions()}),
                  'apt': [[n, apt[n]] for n in names if n in apt]}))
