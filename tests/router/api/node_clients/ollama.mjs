// The `ollama` npm package as its users call it: list, chat and generate (whole and streamed), embed.
import { Ollama } from "ollama";

import { MAX_TOKENS, runChecks, url } from "./checks.mjs";

const client = new Ollama({ host: url });
const messages = [{ role: "user", content: "Say something." }];
const options = { num_predict: MAX_TOKENS };

// What a whole or a streamed answer's last part says about how it ended.
function ending(part) {
  return {
    done: part.done,
    done_reason: part.done_reason,
    prompt_eval_count: part.prompt_eval_count,
    eval_count: part.eval_count,
  };
}

async function collect(stream, key, text) {
  let joined = "";
  let parts = 0;
  let last = null;
  for await (const part of stream) {
    parts += 1;
    joined += text(part);
    last = part;
  }
  return { parts, [key]: joined, ...ending(last) };
}

await runChecks({
  async list() {
    const { models } = await client.list();
    return models.map((model) => ({ name: model.name, model: model.model, size: model.size }));
  },
  async chat() {
    const reply = await client.chat({ model: "alpha", messages, options });
    return { role: reply.message.role, content: reply.message.content, ...ending(reply) };
  },
  async chat_stream() {
    const stream = await client.chat({ model: "alpha", messages, options, stream: true });
    return collect(stream, "content", (part) => part.message.content);
  },
  async generate() {
    const reply = await client.generate({ model: "alpha", prompt: "Once upon a time", options });
    return { response: reply.response, ...ending(reply) };
  },
  async generate_stream() {
    const stream = await client.generate({ model: "alpha", prompt: "Once upon a time", options, stream: true });
    return collect(stream, "response", (part) => part.response);
  },
  async embed() {
    const reply = await client.embed({ model: "embedder", input: ["the world", "once upon a time"] });
    return { model: reply.model, lengths: reply.embeddings.map((vector) => vector.length) };
  },
});
