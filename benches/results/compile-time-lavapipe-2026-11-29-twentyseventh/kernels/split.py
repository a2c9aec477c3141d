# Writes the probe's subsets of moves.wgsl (device_rma_check's kernel): mvN.wgsl
# with mode N alone, and mXY...wgsl with the listed modes (m07: modes 0-7).
import re, os
here = os.path.dirname(os.path.abspath(__file__))
s = open(os.path.join(here, 'moves.wgsl')).read()
head, rest = s.split('    switch p.mode {\n', 1)
body, tail = rest.rsplit('        default: {}', 1)
cases = [c for c in re.split(r'(?m)^(?=        case \du:)', body) if c.strip().startswith('case')]
def w(name, idx):
    open(os.path.join(here, name + '.wgsl'), 'w').write(
        head + '    switch p.mode {\n' + ''.join(cases[i] for i in idx) + '        default: {}' + tail)
for i in range(len(cases)):
    w(f'mv{i}', [i])
for name, idx in [('m07', range(8)), ('m03', range(4)), ('m47', range(4, 8)), ('m01', [0, 1]),
                  ('m13', [1, 3]), ('m137', [1, 3, 7]), ('m0246', [0, 2, 4, 6]),
                  ('m02468', [0, 2, 4, 5, 6, 8]), ('m08', [0, 8]), ('m17', [1, 7])]:
    w(name, idx)
