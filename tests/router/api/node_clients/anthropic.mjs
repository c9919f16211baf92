// `@anthropic-ai/sdk` as its users call it: messages (whole and streamed), token counts, models.
import Anthropic from "@anthropic-ai/sdk";

import { MAX_TOKENS, runChecks, url } from "./checks.mjs";

const client = new Anthropic({ baseURL: url, apiKey: "unused", maxRetries: 0 });
const messages = [{ role: "user", content: "Say something." }];

function text(message) {
  return message.content.filter((block) => block.type === "text").map((block) => block.text).join("");
}

// The fields of Anthropic's model object (the router's listing carries more of its own).
function model(entry) {
  return { type: entry.type, id: entry.id, display_name: entry.display_name, created_at: entry.created_at };
}

function summary(message) {
  return {
    type: message.type,
    role: message.role,
    model: message.model,
    text: text(message),
    stop_reason: message.stop_reason,
    // The whole prompt, as Anthropic's clients add it up: the part the prompt cache held apart.
    usage: {
      input_tokens: message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0),
      output_tokens: message.usage.output_tokens,
    },
  };
}

await runChecks({
  async message() {
    return summary(await client.messages.create({ model: "alpha", max_tokens: MAX_TOKENS, messages }));
  },
  async message_stream() {
    const stream = client.messages.stream({ model: "alpha", max_tokens: MAX_TOKENS, messages });
    const events = [];
    let streamed = "";
    stream.on("streamEvent", (event) => events.push(event.type));
    stream.on("text", (delta) => {
      streamed += delta;
    });
    const final = await stream.finalMessage();
    return { events, streamed, ...summary(final) };
  },
  async count_tokens() {
    return await client.messages.countTokens({ model: "alpha", messages });
  },
  // Anthropic's listing shape and GET /v1/models/{id}: enabled in the pytest module once the
  // router answers them.
  async models_list() {
    const page = await client.models.list();
    return { data: page.data.map(model), has_more: page.has_more, first_id: page.first_id, last_id: page.last_id };
  },
  async models_retrieve() {
    return model(await client.models.retrieve("alpha"));
  },
});
