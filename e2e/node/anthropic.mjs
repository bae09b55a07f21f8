// Streams one Messages request with @anthropic-ai/sdk through the proxy
// (E2E_BASE_URL) and prints what the SDK assembled, as one JSON line.
import Anthropic from '@anthropic-ai/sdk';
import { loopbackFetch } from './loopback.mjs';

const client = new Anthropic({
  baseURL: process.env.E2E_BASE_URL,
  apiKey: process.env.ANTHROPIC_API_KEY,
  maxRetries: 0,
  fetch: loopbackFetch,
  timeout: 30_000,
});

const stream = client.messages.stream({
  model: 'claude-sonnet-4-5',
  max_tokens: 1024,
  messages: [{ role: 'user', content: 'Say hello, then look up the weather in Paris.' }],
  tools: [{
    name: 'get_weather',
    description: 'Current weather for a city.',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  }],
});

let text = '';
const events = [];
stream.on('text', (delta) => { text += delta; });
stream.on('streamEvent', (ev) => { events.push(ev.type); });
const msg = await stream.finalMessage();
const { response } = await stream.withResponse().catch(() => ({}));
process.stdout.write(JSON.stringify({
  text,
  events,
  id: msg.id,
  stop_reason: msg.stop_reason,
  content: msg.content,
  usage: msg.usage,
  request_id: stream.request_id ?? null,
  bb_request_id: response?.headers?.get('x-bb-request-id') ?? null,
}) + '\n');
