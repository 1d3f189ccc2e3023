export type AnswerInput = { "type": "approve" } | { "type": "reject", note: string | null, } | { "type": "answer", text: string, } | { "type": "hand_back" };
