// Runs one streaming request with the openai SDK through the proxy
// (E2E_BASE_URL) and prints what the SDK delivered, as one JSON line.
// argv[2] is "chat" (chat completions with include_usage) or "responses".
import OpenAI from 'openai';
import { loopbackFetch } from './loopback.mjs';

const client = new OpenAI({
  baseURL: process.env.E2E_BASE_URL + '/v1',
  apiKey: process.env.OPENAI_API_KEY,
  maxRetries: 0,
  fetch: loopbackFetch,
  timeout: 30_000,
});

const weather = {
  name: 'get_weather',
  description: 'Current weather for a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const mode = process.argv[2];
const out = { mode, text: '', events: [], tool_calls: [], usage: null };

if (mode === 'chat') {
  const stream = await client.chat.completions.create({
    model: 'gpt-5',
    messages: [{ role: 'user', content: 'Say hello, then look up the weather in Paris.' }],
    tools: [{ type: 'function', function: weather }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const calls = [];
  for await (const chunk of stream) {
    out.events.push(chunk.object);
    if (chunk.usage) out.usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.content) out.text += c.delta.content;
      for (const tc of c.delta?.tool_calls ?? []) {
        const e = (calls[tc.index] ??= { id: '', name: '', arguments: '' });
        if (tc.id) e.id = tc.id;
        if (tc.function?.name) e.name += tc.function.name;
        if (tc.function?.arguments) e.arguments += tc.function.arguments;
      }
      if (c.finish_reason) out.finish_reason = c.finish_reason;
    }
  }
  out.tool_calls = calls;
} else if (mode === 'responses') {
  const stream = await client.responses.create({
    model: 'gpt-5',
    input: 'Say hello, then look up the weather in Paris.',
    tools: [{ type: 'function', ...weather }],
    stream: true,
  });
  for await (const ev of stream) {
    out.events.push(ev.type);
    if (ev.type === 'response.output_text.delta') out.text += ev.delta;
    if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call') {
      out.tool_calls.push({ id: ev.item.call_id, name: ev.item.name, arguments: ev.item.arguments });
    }
    if (ev.type === 'response.completed') {
      out.usage = ev.response.usage;
      out.status = ev.response.status;
      out.output_text = ev.response.output_text ?? null;
    }
  }
} else {
  console.error('usage: node openai.mjs chat|responses');
  process.exit(2);
}
process.stdout.write(JSON.stringify(out) + '\n');
