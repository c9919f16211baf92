// Conversations are kept in this browser's IndexedDB: one record per conversation, holding
// its whole message tree. Records are small, and writing a conversation in one put() keeps a
// reply's text and its stream offset consistent with each other (see generation.js).

const DB_NAME = "corral";
const DB_VERSION = 1;
const STORE = "conversations";

let opened = null;

function open() {
  opened ??= new Promise((resolve, reject) => {
    const request = indexedDB.open(DB_NAME, DB_VERSION);
    request.onupgradeneeded = () => {
      const db = request.result;
      if (!db.objectStoreNames.contains(STORE)) db.createObjectStore(STORE, { keyPath: "id" });
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  return opened;
}

async function run(mode, action) {
  const db = await open();
  return new Promise((resolve, reject) => {
    const transaction = db.transaction(STORE, mode);
    const request = action(transaction.objectStore(STORE));
    transaction.oncomplete = () => resolve(request.result);
    transaction.onerror = () => reject(transaction.error);
    transaction.onabort = () => reject(transaction.error);
  });
}

export function loadAll() {
  return run("readonly", (store) => store.getAll());
}

export function put(conversation) {
  return run("readwrite", (store) => store.put(conversation));
}

export function remove(id) {
  return run("readwrite", (store) => store.delete(id));
}
