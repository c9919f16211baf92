// The `openai` npm package as its users call it: models, chat (whole and streamed), embeddings.
import OpenAI from "openai";

import { MAX_TOKENS, runChecks, url } from "./checks.mjs";

const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
const messages = [{ role: "user", content: "Say something." }];

await runChecks({
  async models_list() {
    const ids = [];
    for await (const model of client.models.list()) ids.push({ id: model.id, object: model.object });
    return ids;
  },
  // GET /v1/models/{id}: enabled in the pytest module once the router serves it.
  async models_retrieve() {
    const model = await client.models.retrieve("alpha");
    return { id: model.id, object: model.object };
  },
  async chat() {
    const reply = await client.chat.completions.create({ model: "alpha", messages, max_tokens: MAX_TOKENS });
    return {
      object: reply.object,
      model: reply.model,
      content: reply.choices[0].message.content,
      role: reply.choices[0].message.role,
      finish_reason: reply.choices[0].finish_reason,
      usage: reply.usage,
    };
  },
  async chat_stream() {
    const stream = await client.chat.completions.create({
      model: "alpha",
      messages,
      max_tokens: MAX_TOKENS,
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = "";
    let chunks = 0;
    let finish_reason = null;
    let usage = null;
    for await (const chunk of stream) {
      chunks += 1;
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        content += choice.delta?.content ?? "";
        finish_reason = choice.finish_reason ?? finish_reason;
      }
    }
    return { chunks, content, finish_reason, usage };
  },
  async embeddings() {
    const reply = await client.embeddings.create({ model: "embedder", input: ["the world", "once upon a time"] });
    return {
      object: reply.object,
      indices: reply.data.map((item) => item.index),
      lengths: reply.data.map((item) => item.embedding.length),
      usage: reply.usage,
    };
  },
});
