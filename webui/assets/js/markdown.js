// Markdown for model replies: marked → highlight.js → DOMPurify → the DOM.
//
// Model output is untrusted. Three layers keep it from becoming markup: raw HTML in the
// Markdown is rendered as text (the `html` renderer escapes it), links keep only http(s) and
// mailto targets, and DOMPurify sanitises the final HTML anyway (no style attributes, no
// images, only safe URLs). Images become plain links: the page's CSP does not load remote
// images, so a reply cannot make the browser fetch an attacker's URL by itself.

import { Marked } from "../vendor/marked.esm.js";
import hljs from "../vendor/highlight.min.js";
import DOMPurify from "../vendor/purify.es.mjs";
import { copyText, flashCopied, h, icon } from "./dom.js";

const SAFE_URL = /^(?:https?:|mailto:)/i;
const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (char) => ESCAPES[char]);
}

function safeUrl(href) {
  const url = String(href ?? "").trim();
  return SAFE_URL.test(url) ? url : null;
}

function highlighted(text, lang) {
  const language = lang && hljs.getLanguage(lang) ? lang : null;
  if (!language) return escapeHtml(text);
  try {
    return hljs.highlight(text, { language, ignoreIllegals: true }).value;
  } catch {
    return escapeHtml(text);
  }
}

function makeParser(highlight) {
  return new Marked({
    gfm: true,
    breaks: false,
    renderer: {
      html({ text }) {
        return escapeHtml(text);
      },
      link({ href, title, tokens }) {
        const label = this.parser.parseInline(tokens);
        const url = safeUrl(href);
        if (!url) return label;
        const titleAttr = title ? ` title="${escapeHtml(title)}"` : "";
        return `<a href="${escapeHtml(url)}"${titleAttr}>${label}</a>`;
      },
      image({ href, text }) {
        const url = safeUrl(href);
        const label = escapeHtml(text || href || "image");
        return url ? `<a href="${escapeHtml(url)}" class="md-image">[image: ${label}]</a>` : label;
      },
      code({ text, lang }) {
        const language = (lang || "").trim().split(/\s+/)[0].toLowerCase();
        const body = highlight ? highlighted(text, language) : escapeHtml(text);
        const label = language ? ` data-lang="${escapeHtml(language)}"` : "";
        return `<pre${label}><code class="hljs">${body}</code></pre>\n`;
      },
    },
  });
}

// Highlighting is left out while a reply streams (the text changes many times a second, and a
// half-written block highlights badly anyway) and done once when the reply is complete.
const plainParser = makeParser(false);
const highlightParser = makeParser(true);

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

const PURIFY_OPTIONS = {
  ALLOWED_URI_REGEXP: /^(?:https?|mailto):/i,
  FORBID_TAGS: ["style", "img", "form", "input", "button", "textarea", "select", "iframe", "svg"],
  FORBID_ATTR: ["style", "id", "name"],
  ADD_ATTR: ["target"],
  RETURN_DOM_FRAGMENT: true,
};

/** Render Markdown into `target` (replacing its content). */
export function renderMarkdown(target, text, { final = true } = {}) {
  const parser = final ? highlightParser : plainParser;
  const html = parser.parse(text ?? "", { async: false });
  const fragment = DOMPurify.sanitize(html, PURIFY_OPTIONS);
  for (const pre of fragment.querySelectorAll("pre")) decorateCodeBlock(pre);
  target.replaceChildren(fragment);
}

// A header with the language and a copy button over every code block.
function decorateCodeBlock(pre) {
  const code = pre.querySelector("code");
  const copy = h("button", {
    type: "button", class: "code-copy", title: "Copy code", "aria-label": "Copy code",
    onClick: async () => {
      await copyText(code?.textContent ?? "");
      flashCopied(copy);
    },
  }, icon("copy"));
  const bar = h("div", { class: "code-bar" }, h("span", {}, pre.dataset.lang || "text"), copy);
  pre.prepend(bar);
}
