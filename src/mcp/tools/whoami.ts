import { z } from 'zod';
import { defineTool } from '../tool-registry';

const outputSchema = {
  tokenId: z.string().describe('The public token id; also the rate-limit key.'),
  name: z.string().describe('The name the token was created with.'),
  tier: z.string().describe('The rate-limit tier the token is counted under.'),
  scopes: z.array(z.string()).describe('What the token may do.'),
};

/** Who the server thinks is calling. Never the secret: the token record does not hold it. */
export const whoamiTool = defineTool<Record<string, never>, typeof outputSchema>({
  name: 'whoami',
  title: 'Who am I',
  description: 'The token this request was authenticated with: its public id, name, rate-limit tier and scopes.',
  outputSchema,
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  run(_args, { token, tier }) {
    const structured = { tokenId: token.id, name: token.name, tier: tier.name, scopes: [...token.scopes] };
    const text = `Token ${token.id} ("${token.name}"), tier ${tier.name}, scopes: ${token.scopes.join(', ') || '(none)'}.`;
    return { text, structured };
  },
});
