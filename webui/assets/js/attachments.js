// Files attached to a message: text files become a fenced block in the message, images an
// OpenAI `image_url` content part (a data: URI, which the page's CSP allows for images).
//
// Images are offered only for models that say they take them: a `/models` entry lists
// `image` in `architecture.input_modalities` (upstream's router) and `vision` in
// `capabilities` when a projector is paired with the model (docs/webui.md). Other models
// refuse them here, with a note, rather than failing at the server.

const MAX_TEXT_BYTES = 512 * 1024;
const MAX_IMAGE_BYTES = 10 * 1024 * 1024;
const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|x-yaml|yaml|toml|x-sh|sql))/;
const TEXT_EXTENSIONS = /\.(txt|md|markdown|rst|csv|tsv|json|jsonl|ya?ml|toml|ini|cfg|conf|xml|html?|css|js|mjs|ts|tsx|jsx|py|rb|go|rs|c|h|cc|cpp|hpp|java|kt|swift|sh|bash|zsh|sql|log|tex|diff|patch)$/i;

/** Whether a model's `/models` entry says it takes images. */
export function acceptsImages(entry) {
  if (!entry) return false;
  if (entry.architecture?.input_modalities?.includes("image")) return true;
  const capabilities = entry.capabilities ?? entry.meta?.capabilities;
  if (Array.isArray(capabilities) && capabilities.some((item) => /vision|image/i.test(item))) return true;
  const modalities = entry.modalities ?? entry.meta?.modalities;
  if (Array.isArray(modalities)) return modalities.some((item) => /vision|image/i.test(item));
  return Boolean(modalities?.vision || modalities?.image);
}

export function isImage(file) {
  return file.type.startsWith("image/");
}

export function isText(file) {
  return TEXT_TYPES.test(file.type) || TEXT_EXTENSIONS.test(file.name);
}

/** A text file as a fenced block named after the file (the fence outlasts any in the text). */
export function fencedBlock(name, text) {
  const longest = Math.max(2, ...[...text.matchAll(/`{3,}/g)].map((match) => match[0].length));
  const fence = "`".repeat(longest + 1);
  const language = /\.([\w]+)$/.exec(name)?.[1] ?? "";
  return `${name}:\n${fence}${language}\n${text.replace(/\n$/, "")}\n${fence}`;
}

function readAs(file, how) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error ?? new Error(`Could not read ${file.name}.`));
    if (how === "text") reader.readAsText(file);
    else reader.readAsDataURL(file);
  });
}

/**
 * Read dropped, pasted or chosen files. Resolves to { texts: [block], images: [{name, url}],
 * notes: [why a file was left out] }.
 */
export async function readFiles(files, { images: imagesAllowed }) {
  const texts = [];
  const images = [];
  const notes = [];
  for (const file of files) {
    if (isImage(file)) {
      if (!imagesAllowed) notes.push(`${file.name || "image"}: this model does not take images.`);
      else if (file.size > MAX_IMAGE_BYTES) notes.push(`${file.name}: images up to 10 MB can be attached.`);
      else images.push({ name: file.name || "image", url: await readAs(file, "dataURL") });
    } else if (isText(file)) {
      if (file.size > MAX_TEXT_BYTES) notes.push(`${file.name}: text files up to 512 KB can be attached.`);
      else texts.push(fencedBlock(file.name || "pasted.txt", await readAs(file, "text")));
    } else {
      notes.push(`${file.name || "file"}: only text files and images can be attached.`);
    }
  }
  return { texts, images, notes };
}

/** A user message's content as sent: a string, or text and image parts when it has images. */
export function contentOf(message) {
  if (!message.images?.length) return message.content;
  return [
    { type: "text", text: message.content },
    ...message.images.map((image) => ({ type: "image_url", image_url: { url: image.url } })),
  ];
}
