#!/usr/bin/env python3
# PP-OCRv4 (rapidocr-onnxruntime 1.4.4 models, onnxruntime CPU, 1 thread) on the target crops that
# `VISION_BENCH_DUMP=DIR cargo bench -p phoneagent-vision` writes (DIR/N.png + DIR/labels.tsv), to
# compare with Tesseract on exactly the same boxes (docs/safety.md "Reading the screen (OCR)").
# Setup: python3 -m venv v && v/bin/pip install rapidocr-onnxruntime==1.4.4; run: v/bin/python THIS DIR
import sys, time, os
from rapidocr_onnxruntime import RapidOCR
import cv2

d = sys.argv[1]
eng = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)
rows = [l.rstrip('\n').split('\t') for l in open(os.path.join(d, 'labels.tsv'), encoding='utf-8')]

def squash(s): return ''.join(s.split())
def acc(w, g):
    a, b = squash(w), squash(g)
    if not a: return 1.0 if not b else 0.0
    prev = list(range(len(b)+1))
    for i, ca in enumerate(a):
        cur = [i+1]*(len(b)+1)
        for j, cb in enumerate(b):
            cur[j+1] = min(prev[j]+(ca!=cb), prev[j+1]+1, cur[j]+1)
        prev = cur
    return max(0.0, 1 - prev[len(b)]/len(a))

for mode in ['rec_only', 'det+rec']:
    times=[]; ex=0; ch=0.0; tex=0; tch=0.0; n=0
    for r in rows:
        i, name, want, tess = r[0], r[1], r[2], (r[3] if len(r)>3 else '')
        if not want: continue
        img = cv2.imread(os.path.join(d, f'{i}.png'))
        t0=time.perf_counter()
        if mode=='rec_only':
            res,_ = eng(img, use_det=False, use_cls=False, use_rec=True)
            got = ''.join(x[0] for x in (res or []))
        else:
            res,_ = eng(img, use_cls=False)
            got = ' '.join(x[1] for x in (res or []))
        times.append((time.perf_counter()-t0)*1000)
        n+=1; ex += any(squash(got)==squash(w) for w in want.split("|")); ch += max(acc(w, got) for w in want.split("|"))
        tex += any(squash(tess)==squash(w) for w in want.split("|")); tch += max(acc(w, tess) for w in want.split("|"))
        if mode=="rec_only" and not any(squash(got)==squash(w) for w in want.split("|")): print('  pp miss', name, want, '->', got)
    times.sort()
    print(f'{mode}: n={n} exact={100*ex/n:.1f}% chars={100*ch/n:.1f}% p50={times[len(times)//2]:.1f}ms p95={times[int(0.95*(len(times)-1))]:.1f}ms | tesseract same crops exact={100*tex/n:.1f}% chars={100*tch/n:.1f}%')
