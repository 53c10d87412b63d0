// The message names and search attributes of the bare baseline shaped like a governed read, shared by
// its workflows (bare-workflows.ts) and its caller (scenarios.ts).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const shapedNames = {
  admit: 'shapedAdmit',
  outcome: 'shapedOutcome',
  end: 'shapedEnd',
  propose: 'shapedPropose',
} as const;

/** The attributes a governed call starts with and upserts as it closes (toolgate's, registered on the server). */
export const shapedAttributes = {
  toolName: defineSearchAttributeKey('ToolName', SearchAttributeType.KEYWORD),
  caller: defineSearchAttributeKey('Caller', SearchAttributeType.KEYWORD),
  sessionId: defineSearchAttributeKey('SessionId', SearchAttributeType.KEYWORD),
  approvalState: defineSearchAttributeKey('ApprovalState', SearchAttributeType.KEYWORD),
  toolCode: defineSearchAttributeKey('ToolCode', SearchAttributeType.KEYWORD),
  riskLevel: defineSearchAttributeKey('RiskLevel', SearchAttributeType.INT),
};
