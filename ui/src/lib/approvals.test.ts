import { describe, expect, it } from 'vitest';
import fixture from './fixtures/run-hard-approval.json';
import type { EventEnvelope } from './events';
import { answerFailed, applyApprovalEvent, current, emptyApprovals, markAnswering, takeOverActive } from './approvals';

const events = fixture as unknown as EventEnvelope[];
const byKind = (k: string, n = 0) => events.filter((e) => e.kind === k)[n]!;

describe('approvals state', () => {
  it('a human_requested event opens the dialog with the request', () => {
    const s = applyApprovalEvent(emptyApprovals(), byKind('human_requested'));
    const cur = current(s, 0);
    expect(cur?.id).toBe('req-1');
    expect(cur?.request).toEqual({ type: 'approval', tool: 'tap', target: '提交订单', tier: 'hard', reasons: ['commit_verb_irreversible_object'] });
    expect(cur?.step).toBe(1);
  });

  it('the resolution (from any front end) withdraws it', () => {
    let s = applyApprovalEvent(emptyApprovals(), byKind('human_requested'));
    s = applyApprovalEvent(s, byKind('human_resolved'));
    expect(current(s, 0)).toBeNull();
    expect(s.pending).toEqual([]);
  });

  it('answering hides the request at once; a failed answer shows it again unless it is gone', () => {
    let s = applyApprovalEvent(emptyApprovals(), byKind('human_requested'));
    s = markAnswering(s, 'req-1');
    expect(current(s, 0)).toBeNull();
    const retry = answerFailed(s, 'req-1', false);
    expect(current(retry, 0)?.id).toBe('req-1');
    const gone = answerFailed(s, 'req-1', true);
    expect(gone.pending).toEqual([]);
  });

  it('expired requests are not shown; duplicates are ignored; the oldest comes first', () => {
    let s = applyApprovalEvent(emptyApprovals(), byKind('human_requested'));
    s = applyApprovalEvent(s, byKind('human_requested'));
    expect(s.pending).toHaveLength(1);
    s = applyApprovalEvent(s, byKind('human_requested', 1));
    expect(current(s, 0)?.id).toBe('req-1');
    expect(current(s, 4_102_444_800_001)).toBeNull();
  });

  it('run_finished clears the run’s requests; take_over is detected', () => {
    const take = { ...byKind('human_requested'), request_id: 't1', request: { type: 'take_over', message: 'log in' } } as unknown as EventEnvelope;
    let s = applyApprovalEvent(emptyApprovals(), take);
    expect(takeOverActive(s)?.id).toBe('t1');
    s = applyApprovalEvent(s, byKind('run_finished'));
    expect(s.pending).toEqual([]);
    expect(takeOverActive(s)).toBeNull();
  });
});
