// The docmeta web interface: one ES module, a hash router over the JSON API.
//
// Safe by construction: the page is built only with createElement, textContent, setAttribute
// and append (see `h`). Every text that comes from the server (labels, values, names) is user
// input and only ever becomes a text node or a form control's value. Attribute names starting
// with "on" are refused, and URLs in href/src/action must be same-origin paths or fragments.
//
// The interface holds no rule of its own: it shows what the API answers and sends what the user
// asks for; a 403 hides a section with a short note, a 401 shows the sign-in page.

const PAGE_SIZE = 20;
const LIST_ALL = 500; // the API's largest page

/** Every event name of the change feed (the stream sends each as a named SSE event). */
const EVENT_NAMES = [
  'metadata.metadata_type_created', 'metadata.metadata_type_edited',
  'metadata.metadata_type_deleted', 'metadata.document_metadata_added',
  'metadata.document_metadata_edited', 'metadata.document_metadata_removed',
  'metadata.metadata_type_relationship_updated', 'documents.document_type_created',
  'documents.document_type_edited', 'documents.document_type_deleted',
  'documents.document_created', 'documents.document_edited', 'documents.document_type_changed',
  'documents.document_deleted', 'document_states.workflow_instance_transitioned',
  'document_states.workflow_edited', 'documents.document_file_created',
  'documents.document_file_deleted', 'acls.acl_created', 'acls.acl_edited', 'acls.acl_deleted',
  'permissions.role_edited', 'user_management.user_edited', 'user_management.group_edited',
  'cabinets.cabinet_edited', 'user_management.device_created', 'user_management.device_revoked',
  'acls.object_parents_set', 'replica.document_synced', 'replica.document_removed',
];

const VALUE_TYPES = ['text', 'integer', 'decimal', 'date', 'datetime', 'time', 'boolean'];

const state = {
  user: null, // {id, username, is_superuser}
  csrf: null,
  showAdmin: false,
  events: null, // the EventSource
  onEvent: null, // the current page's handler of feed events
  gen: 0, // bumped by every navigation: a page's late answers are dropped
  lastWrite: 0, // when this page last wrote (its own events are not "someone else")
  flash: null, // {hash, text}: a message for the status line of the page at `hash`
  classes: null, // {validators, parsers} from the OpenAPI document
};

// ----- building the DOM ---------------------------------------------------------------------

const URL_ATTRIBUTES = new Set(['href', 'src', 'action', 'formaction', 'xlink:href', 'poster', 'data', 'srcset', 'ping']);
const REFUSED_TAGS = new Set(['script', 'iframe', 'object', 'embed', 'frame', 'base', 'meta']);

/**
 * A same-origin path or a fragment; anything else (another origin, a script URL) throws. A value
 * with a control character or a backslash is refused outright (browsers drop tabs and newlines
 * from URLs and read "\\" as "/", so "/\t/evil.example" would be another host), and a path must
 * resolve to this origin.
 */
function safeUrl(value) {
  const text = String(value);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f\\]/.test(text)) throw new Error(`refused URL: ${JSON.stringify(text)}`);
  if (text.startsWith('#/') || text === '#main') return text;
  if (text.startsWith('/') && !text.startsWith('//')) {
    let url = null;
    try {
      url = new URL(text, location.origin);
    } catch {
      url = null;
    }
    if (url && url.origin === location.origin) return text;
  }
  throw new Error(`refused URL: ${JSON.stringify(text)}`);
}

/**
 * `h(tag, attrs, ...children)`: an element with attributes set by setAttribute (names checked:
 * no event handler attributes) and children appended (strings become text nodes).
 */
function h(tag, attrs, ...children) {
  if (REFUSED_TAGS.has(String(tag).toLowerCase())) throw new Error(`refused element: ${tag}`);
  const el = document.createElement(tag);
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (!/^[a-zA-Z][a-zA-Z0-9-]*$/.test(name) || /^on/i.test(name) || /^(srcdoc|style)$/i.test(name)) {
        throw new Error(`refused attribute: ${name}`);
      }
      if (value === undefined || value === null || value === false) continue;
      const text = value === true ? '' : String(value);
      el.setAttribute(name, URL_ATTRIBUTES.has(name.toLowerCase()) ? safeUrl(text) : text);
    }
  }
  addChildren(el, children);
  return el;
}

function addChildren(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Adds a listener and answers the element. */
function listen(el, type, handler) {
  el.addEventListener(type, handler);
  return el;
}

/** A path segment from an id. */
function seg(value) {
  return encodeURIComponent(String(value));
}

/** `#/path?query` with the non-empty params. */
function hashLink(path, params) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== '' && v !== null && v !== undefined) query.set(k, String(v));
  }
  const qs = query.toString();
  return `#${path}${qs ? `?${qs}` : ''}`;
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

let uid = 0;
function newId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** A labelled control: [label, control, error] with ids linked; answers the pieces. */
function field(labelText, control, { hint, errorId, required } = {}) {
  const id = control.id || newId('f');
  control.id = id;
  const error = h('p', { class: 'field-error', id: errorId || `${id}-error`, role: 'alert' });
  const described = [error.id];
  let hintEl = null;
  if (hint) {
    hintEl = h('p', { class: 'hint', id: `${id}-hint` }, hint);
    described.unshift(hintEl.id);
  }
  control.setAttribute('aria-describedby', described.join(' '));
  if (required) {
    control.setAttribute('aria-required', 'true');
    control.required = true;
  }
  const label = h('label', { for: id }, labelText, required ? h('span', { class: 'required' }, ' (required)') : null);
  const wrapper = h('div', { class: 'field' }, label, control, hintEl, error);
  return { wrapper, label, control, error };
}

function select(attrs, options, selected) {
  const el = h('select', attrs);
  for (const o of options) {
    el.append(h('option', { value: o.value, selected: String(o.value) === String(selected ?? '') }, o.text));
  }
  return el;
}

function button(text, attrs, handler) {
  const b = h('button', { type: 'button', ...attrs }, text);
  if (handler) listen(b, 'click', handler);
  return b;
}

/** The controls whose request runs (see `busy`). */
const running = new WeakSet();

/**
 * Runs `task` with `controls` (a button, or several) disabled and `aria-busy`, restored when it
 * ends; while it runs, a second call on any of them is ignored (answers undefined), so that a
 * double click or a second Enter sends one request. A focused control that lost the focus by
 * being disabled gets it back (or its re-rendered namesake, by id) if nothing else took it.
 */
async function busy(controls, task) {
  const list = (Array.isArray(controls) ? controls : [controls]).filter(Boolean);
  if (list.some((c) => running.has(c))) return undefined;
  const focused = list.find((c) => c === document.activeElement) || null;
  list.forEach((c) => {
    running.add(c);
    c.disabled = true;
    c.setAttribute('aria-busy', 'true');
  });
  try {
    return await task();
  } finally {
    list.forEach((c) => {
      running.delete(c);
      c.disabled = false;
      c.removeAttribute('aria-busy');
    });
    if (focused && (!document.activeElement || document.activeElement === document.body)) {
      const again = focused.isConnected ? focused : (focused.id && document.getElementById(focused.id));
      if (again) again.focus();
    }
  }
}

function note(text) {
  return h('p', { class: 'note' }, text);
}

function alertBox(text) {
  return h('p', { class: 'form-error', role: 'alert' }, text || '');
}

function table(caption, headers, rows) {
  return h('table', {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, headers.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows));
}

// ----- the API --------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(messageOf(status, body));
    this.status = status;
    this.body = body;
    this.retryAfter = retryAfter;
  }
}

/** The messages of a DRF error body, flattened ("field: message" for nested ones). */
function flattenErrors(body, prefix = '') {
  const out = [];
  if (typeof body === 'string') out.push(prefix ? `${prefix}: ${body}` : body);
  else if (Array.isArray(body)) body.forEach((b) => out.push(...flattenErrors(b, prefix)));
  else if (body && typeof body === 'object') {
    for (const [k, v] of Object.entries(body)) {
      const p = k === 'detail' || k === 'non_field_errors' ? prefix : (prefix ? `${prefix}.${k}` : k);
      out.push(...flattenErrors(v, p));
    }
  }
  return out;
}

function messageOf(status, body) {
  if (status === 403) return 'You may not do this.';
  if (status === 0) return 'The server could not be reached.';
  if (body && typeof body === 'object') {
    if (typeof body.detail === 'string' && body.detail) return body.detail;
    const all = flattenErrors(body);
    if (all.length) return all.join(' ');
  }
  if (status === 404) return 'Not found.';
  return `The server answered ${status}.`;
}

/** The messages for one field of a refusal (strings only). */
function fieldErrors(error, name) {
  const v = error && error.body && typeof error.body === 'object' ? error.body[name] : null;
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.flatMap((x) => (typeof x === 'string' ? [x] : flattenErrors(x)));
  if (v && typeof v === 'object') return flattenErrors(v);
  return [];
}

/**
 * `method path` with a JSON (or FormData) body; the parsed answer, or an ApiError. Options:
 * `quiet` leaves a 401 to the caller (no sign-in page), `write: false` marks a POST that
 * changes nothing (a preview), so that the change feed's events stay "someone else's".
 */
async function api(method, path, body, { quiet = false, write = true } = {}) {
  const init = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin', cache: 'no-store' };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (method !== 'GET' && method !== 'HEAD') {
    if (state.csrf) init.headers['X-CSRF-Token'] = state.csrf;
    if (write) state.lastWrite = Date.now();
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, null);
  }
  let data = null;
  if (response.status !== 204) {
    const text = await response.text();
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = { detail: text.slice(0, 300) };
      }
    }
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data, response.headers.get('Retry-After'));
    if (response.status === 401 && !quiet && !path.startsWith('/ui/session')) sessionEnded();
    throw error;
  }
  return data;
}

/**
 * Answers asked for before the session is known (see `prefetch`), by path: each is
 * `{ok, value}` or `{ok: false, error}`, taken once by `get`.
 */
const prefetched = new Map();

/** Asks for `path` now, alongside the session, for the first page to take (a 401 stays quiet). */
function prefetch(path) {
  if (!prefetched.has(path)) {
    prefetched.set(path, api('GET', path, undefined, { quiet: true }).then((value) => ({ ok: true, value }), (error) => ({ ok: false, error })));
  }
}

async function get(path) {
  const early = prefetched.get(path);
  if (!early) return api('GET', path);
  prefetched.delete(path);
  const r = await early;
  if (r.ok) return r.value;
  if (r.error.status === 401) sessionEnded();
  throw r.error;
}

/** The path of page `page` of a list, as `getAll` asks for it. */
function pageOf(path, page) {
  return `${path}${path.includes('?') ? '&' : '?'}page=${page}&page_size=${LIST_ALL}`;
}

/** Every item of a paged list (at most 20 pages of 500). */
async function getAll(path) {
  const items = [];
  for (let page = 1; page <= 20; page += 1) {
    const data = await get(pageOf(path, page));
    items.push(...(data.results || []));
    if (!data.next) break;
  }
  return items;
}

/** `{ok, value}` or `{ok: false, error}`: a failure does not end the page. 401 still throws. */
async function settle(promise) {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    if (error.status === 401) throw error;
    return { ok: false, error };
  }
}

function forbiddenNote(result, what) {
  const e = result.error;
  if (e.status === 403) return note(`You may not see ${what}.`);
  return h('p', { class: 'form-error', role: 'alert' }, `Could not load ${what}: ${e.message}`);
}

// ----- session --------------------------------------------------------------------------------

const main = () => document.getElementById('main');
const header = () => document.getElementById('site-header');

/**
 * Reads the session: the interface runs on its own session only (never on ambient credentials
 * such as Basic). Answers `{ok: true}`, or `{ok: false, message}` for the sign-in page (no
 * message after a 401, the failure otherwise).
 */
async function loadSession() {
  try {
    const s = await api('GET', '/ui/session');
    state.user = s.user;
    state.csrf = s.csrf_token || null;
    return { ok: true };
  } catch (e) {
    state.user = null;
    state.csrf = null;
    if (e.status === 401) return { ok: false, message: '' };
    return { ok: false, message: `Could not read your session: ${e.message}` };
  }
}

function sessionEnded(message = 'Your session has ended. Please sign in again.') {
  const wasSignedIn = state.user !== null;
  state.user = null;
  state.csrf = null;
  stopEvents();
  state.gen += 1;
  if (wasSignedIn || !document.getElementById('signin-form')) signInPage(message);
}

function signInPage(message = '', isError = true) {
  state.gen += 1;
  state.onEvent = null;
  header().replaceChildren();
  document.title = 'Sign in – docmeta';
  const errorBox = h('p', { class: 'form-error', role: 'alert', id: 'signin-error' }, isError ? message : '');
  const info = h('p', { class: 'status', role: 'status' }, isError ? '' : message);
  const username = field('Username', h('input', { type: 'text', name: 'username', id: 'username', autocomplete: 'username', autocapitalize: 'none', spellcheck: 'false' }));
  const password = field('Password', h('input', { type: 'password', name: 'password', id: 'password', autocomplete: 'current-password' }));
  const submit = h('button', { type: 'submit' }, 'Sign in');
  const form = h('form', { id: 'signin-form', class: 'signin', novalidate: true, 'aria-labelledby': 'signin-title' },
    errorBox, username.wrapper, password.wrapper, h('div', { class: 'actions' }, submit));
  listen(form, 'submit', async (event) => {
    event.preventDefault();
    await busy(submit, async () => {
      errorBox.textContent = '';
      username.error.textContent = '';
      password.error.textContent = '';
      try {
        const s = await api('POST', '/ui/session', { username: username.control.value, password: password.control.value });
        state.user = s.user;
        state.csrf = s.csrf_token || null;
        await startApp();
      } catch (e) {
        const u = fieldErrors(e, 'username');
        const p = fieldErrors(e, 'password');
        username.error.textContent = u.join(' ');
        password.error.textContent = p.join(' ');
        if (e.status === 429) {
          const wait = e.retryAfter ? ` Try again in ${e.retryAfter} seconds.` : '';
          errorBox.textContent = `${e.message}${wait}`;
        } else if (e.status === 401) {
          errorBox.textContent = e.message || 'Wrong username or password.';
        } else if (!u.length && !p.length) {
          errorBox.textContent = e.message;
        } else {
          errorBox.textContent = 'Please correct the fields below.';
        }
        password.control.value = '';
        (u.length ? username.control : password.control).focus();
      }
    });
  });
  const h1 = h('h1', { tabindex: '-1', id: 'signin-title' }, 'Sign in to docmeta');
  main().replaceChildren(h('div', { class: 'narrow' }, h1, info, form));
  username.control.focus();
}

/**
 * Signs out: only when the server says so (204, or 401: already signed out) does the page forget
 * the session; any other answer leaves the user signed in, and says so (the session still works).
 */
async function signOut(event) {
  const control = event && event.currentTarget;
  const say = (text) => {
    const box = document.getElementById('signout-error');
    if (box) box.textContent = text;
  };
  await busy(control, async () => {
    say('');
    const headers = { Accept: 'application/json' };
    if (state.csrf) headers['X-CSRF-Token'] = state.csrf;
    let status = 0;
    let body = null;
    try {
      const response = await fetch('/ui/session', { method: 'DELETE', headers, credentials: 'same-origin', cache: 'no-store' });
      status = response.status;
      if (status !== 204) {
        const text = await response.text().catch(() => '');
        try {
          body = text ? JSON.parse(text) : null;
        } catch {
          body = { detail: text.slice(0, 300) };
        }
      }
    } catch {
      status = 0;
    }
    if (status === 204 || status === 401) {
      state.user = null;
      state.csrf = null;
      stopEvents();
      signInPage('You have signed out.', false);
      return;
    }
    say(`Sign-out failed: ${messageOf(status, body)} You are still signed in.`);
  });
}

function renderHeader() {
  const current = (location.hash.split('?')[0] || '#/documents');
  const navLink = (href, text, id) => {
    const a = h('a', { href, id }, text);
    if (current === href || current.startsWith(`${href}/`)) a.setAttribute('aria-current', 'page');
    return h('li', {}, a);
  };
  const items = [navLink('#/documents', 'Documents', 'nav-documents')];
  if (state.showAdmin) items.push(navLink('#/admin', 'Administration', 'nav-admin'));
  header().replaceChildren(
    h('a', { class: 'brand', href: '#/documents' }, h('img', { src: '/ui/icon.svg', alt: '', width: '24', height: '24' }), 'docmeta'),
    h('nav', { 'aria-label': 'Main' },
      h('ul', {}, items),
      h('div', { class: 'who' },
        h('span', {}, 'Signed in as ', h('strong', { class: 'username' }, state.user.username)),
        button('Sign out', { class: 'secondary' }, signOut),
        h('p', { class: 'form-error', role: 'alert', id: 'signout-error' }, ''))),
  );
}

/**
 * Whether to offer Administration: to a superuser, or to whom an administration list shows
 * something beyond what every user sees (the metadata types of their values, themselves).
 */
async function checkAdmin() {
  if (state.user && state.user.is_superuser) return true;
  const lists = [['/api/v4/documents/types/', 0], ['/api/v4/groups/', 0], ['/api/v4/roles/', 0], ['/api/v4/users/', 1]];
  const answers = await Promise.all(lists.map(([p]) => settle(get(`${p}?page_size=1`))));
  return answers.some((a, i) => a.ok && (a.value.count ?? 0) > lists[i][1]);
}

async function startApp() {
  state.showAdmin = false;
  // The page first; the change feed and the Administration check after it.
  await route();
  prefetched.clear();
  if (!state.user) return;
  startEvents();
  try {
    state.showAdmin = await checkAdmin();
  } catch {
    return;
  }
  if (state.user) renderHeader();
}

// ----- the change feed ------------------------------------------------------------------------

function stopEvents() {
  if (state.events) state.events.close();
  state.events = null;
}

async function startEvents() {
  stopEvents();
  if (typeof EventSource === 'undefined') return;
  // Start after the newest event visible now, not at the start of the log.
  let after = null;
  try {
    const newest = await get('/api/v4/events/?page_size=1');
    after = newest.results && newest.results.length ? newest.results[0].id : null;
  } catch {
    return;
  }
  if (!state.user || state.events) return;
  const source = new EventSource(after === null ? '/api/v4/events/' : `/api/v4/events/?after=${seg(after)}`);
  const handle = (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    if (state.onEvent && event && typeof event === 'object') state.onEvent(event);
  };
  source.addEventListener('message', handle);
  EVENT_NAMES.forEach((name) => source.addEventListener(name, handle));
  state.events = source;
}

/** The document ids an event is about. */
function eventDocuments(event) {
  return [event.target, event.action_object]
    .filter((o) => o && o.app_label === 'documents' && o.model_name === 'document')
    .map((o) => Number(o.id));
}

/** Whether an event is this page's own doing (this user, just after this page wrote). */
function ownEvent(event) {
  return event.actor && state.user && event.actor.id === state.user.id && Date.now() - state.lastWrite < 5000;
}

function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// ----- routing --------------------------------------------------------------------------------

function parseHash() {
  const raw = location.hash.startsWith('#/') ? location.hash.slice(1) : '/';
  const at = raw.indexOf('?');
  const path = at < 0 ? raw : raw.slice(0, at);
  const params = new URLSearchParams(at < 0 ? '' : raw.slice(at + 1));
  let parts;
  try {
    parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    parts = ['?'];
  }
  return { parts, params };
}

/** A page context: `alive()` is false once the user has gone elsewhere. */
function context(params) {
  const gen = state.gen;
  return { gen, params, alive: () => gen === state.gen && state.user !== null };
}

/** Puts a page in place: title, content, focus on its h1. */
function showPage(ctx, title, nodes) {
  if (!ctx.alive()) return false;
  document.title = `${title} – docmeta`;
  main().replaceChildren(...nodes);
  const h1 = main().querySelector('h1');
  if (h1) h1.focus();
  return true;
}

/** Goes to `hash` (or shows it again) with `text` in its status line. */
function goWith(hash, text) {
  state.flash = { hash, text };
  if (location.hash === hash) route();
  else location.hash = hash;
}

/** A page's status line (role=status), holding the message left for this page, if any. */
function statusLine(id) {
  const flash = state.flash && state.flash.hash === location.hash ? state.flash.text : '';
  state.flash = null;
  return h('p', { class: 'status', role: 'status', id }, flash);
}

function pageTitle(text) {
  return h('h1', { tabindex: '-1' }, text);
}

function positiveInt(value) {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : null;
}

async function route() {
  if (!state.user) return;
  state.gen += 1;
  state.onEvent = null;
  const { parts, params } = parseHash();
  const ctx = context(params);
  renderHeader();
  main().setAttribute('aria-busy', 'true');
  main().replaceChildren(h('p', { class: 'loading' }, 'Loading…'));
  const [a, b, c, d] = parts;
  try {
    if (parts.length === 0) {
      location.replace('#/documents');
      return;
    }
    if (a === 'documents' && !b) await documentsPage(ctx);
    else if (a === 'documents' && positiveInt(b) && !c) await documentPage(ctx, positiveInt(b));
    else if (a === 'admin' && !b) await adminPage(ctx);
    else if (a === 'admin' && b === 'metadata-types' && !c) await metadataTypesPage(ctx);
    else if (a === 'admin' && b === 'metadata-types' && (c === 'new' || positiveInt(c)) && !d) await metadataTypePage(ctx, c === 'new' ? null : positiveInt(c));
    else if (a === 'admin' && b === 'document-types' && !c) await documentTypesPage(ctx);
    else if (a === 'admin' && b === 'document-types' && positiveInt(c) && !d) await documentTypePage(ctx, positiveInt(c));
    else if (a === 'admin' && b === 'users' && !c) await usersPage(ctx);
    else if (a === 'admin' && b === 'groups' && !c) await groupsPage(ctx);
    else if (a === 'admin' && b === 'groups' && positiveInt(c) && !d) await groupPage(ctx, positiveInt(c));
    else if (a === 'admin' && b === 'roles' && !c) await rolesPage(ctx);
    else if (a === 'admin' && b === 'roles' && positiveInt(c) && !d) await rolePage(ctx, positiveInt(c));
    else if (a === 'acl' && b && c && positiveInt(d) && parts.length === 4) await aclPage(ctx, b, c, positiveInt(d));
    else showPage(ctx, 'Not found', [pageTitle('Not found'), h('p', {}, 'There is no such page. '), h('p', {}, h('a', { href: '#/documents' }, 'Go to the documents'))]);
  } catch (e) {
    if (e.status === 401 || !ctx.alive()) return;
    const title = e.status === 404 ? 'Not found' : (e.status === 403 ? 'Not allowed' : 'Error');
    showPage(ctx, title, [pageTitle(title), alertBox(e.message)]);
  } finally {
    if (ctx.alive()) main().removeAttribute('aria-busy');
  }
}

/** Whether a form control holds an edit the user has not saved. */
function edited(el) {
  if (el.tagName === 'SELECT') {
    const initial = [...el.options].find((o) => o.defaultSelected) || el.options[0];
    return initial ? el.value !== initial.value : false;
  }
  if (el.type === 'checkbox' || el.type === 'radio') return el.checked !== el.defaultChecked;
  if (el.type === 'file') return false;
  return el.value !== el.defaultValue;
}

/**
 * Re-renders part of a page keeping the focused control (by id) and, with `keepEdits`, the
 * unsaved edits of the other controls (by id), but not those of the control `except`.
 */
function keepFocus(render, { keepEdits = false, except = null } = {}) {
  const active = document.activeElement;
  const id = active && active.id;
  const edits = [];
  if (keepEdits) {
    for (const el of main().querySelectorAll('input[id], select[id], textarea[id]')) {
      if (el.id !== except && edited(el)) edits.push([el.id, el.type === 'checkbox' ? el.checked : el.value]);
    }
  }
  render();
  for (const [editId, value] of edits) {
    const el = document.getElementById(editId);
    if (!el) continue;
    if (el.type === 'checkbox') el.checked = value;
    else if (el.tagName !== 'SELECT' || [...el.options].some((o) => o.value === value)) el.value = value;
  }
  if (id) {
    const again = document.getElementById(id);
    if (again && again !== document.activeElement) again.focus();
  }
}

// ----- documents --------------------------------------------------------------------------------

const METADATA_TYPES = '/api/v4/metadata/metadata-types/';

async function metadataTypes() {
  return getAll(METADATA_TYPES);
}

/** The API request of the documents page: a search when there is a query, else the list. */
function documentsUrl(params) {
  const q = params.get('q') || '';
  const query = new URLSearchParams();
  if (q) query.set('q', q);
  query.set('page', String(positiveInt(params.get('page')) || 1));
  query.set('page_size', String(PAGE_SIZE));
  if (params.get('ordering')) query.set('ordering', params.get('ordering'));
  return `${q ? '/api/v4/search/documents/' : '/api/v4/documents/'}?${query}`;
}

/**
 * The orders "Sort by" offers: a search is by relevance or by a metadata type's values (it
 * ignores id orders); the plain list is by id, either way, or by a metadata type's values.
 */
function sortOptions(searching, types) {
  const options = searching
    ? [{ value: '', text: 'Relevance' }]
    : [{ value: '', text: 'ID ascending' }, { value: '-id', text: 'ID descending' }];
  for (const t of types) {
    options.push({ value: t.name, text: `${t.label} ascending` });
    options.push({ value: `-${t.name}`, text: `${t.label} descending` });
  }
  return options;
}

async function documentsPage(ctx) {
  const q = ctx.params.get('q') || '';
  const page = positiveInt(ctx.params.get('page')) || 1;
  const ordering = ctx.params.get('ordering') || '';
  // The list first; the metadata types (for "Sort by") join the form when they come.
  const firstPromise = load();
  const typesPromise = settle(metadataTypes());
  let types = [];
  const search = h('input', { type: 'search', id: 'search-q', name: 'q', value: q, autocomplete: 'off', spellcheck: 'false' });
  const sort = h('select', { id: 'search-ordering', name: 'ordering' });
  // Fills "Sort by" for a search or the list, keeping the chosen order where it is offered.
  const fillSort = (wanted) => {
    const options = sortOptions(search.value.trim() !== '', types);
    const chosen = options.some((o) => o.value === wanted) ? wanted : '';
    sort.replaceChildren(...options.map((o) => h('option', { value: o.value, selected: o.value === chosen }, o.text)));
    sort.value = chosen;
  };
  fillSort(ordering === 'id' ? '' : ordering);
  let searching = q !== '';
  listen(search, 'input', () => {
    if ((search.value.trim() !== '') !== searching) {
      searching = !searching;
      fillSort(sort.value);
    }
  });
  const form = h('form', { role: 'search', class: 'search', novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'search-q' }, 'Search'), search,
      h('p', { class: 'hint', id: 'search-hint' }, 'Words, phrases in quotes, field terms such as status:paid, amount:>100, due_date:[2024-01-01 TO 2024-03-31], has:owner; OR and NOT.')),
    h('div', { class: 'field', 'aria-busy': 'true' }, h('label', { for: 'search-ordering' }, 'Sort by'), sort),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Search')));
  search.setAttribute('aria-describedby', 'search-hint');
  listen(form, 'submit', (event) => {
    event.preventDefault();
    const target = hashLink('/documents', { q: search.value.trim(), ordering: sort.value });
    if (location.hash === target) route();
    else location.hash = target;
  });
  typesPromise.then((r) => {
    sort.parentElement.removeAttribute('aria-busy');
    if (!r.ok || !ctx.alive()) return;
    types = r.value;
    // The order in the address until the user picks another one.
    fillSort(sort.value === '' && !sort.dataset.touched ? (ordering === 'id' ? '' : ordering) : sort.value);
  }).catch(() => {});
  listen(sort, 'change', () => { sort.dataset.touched = '1'; });
  const results = h('div', { id: 'results' });
  const status = statusLine();

  async function load() {
    let data;
    try {
      data = await get(documentsUrl(ctx.params));
    } catch (e) {
      if (e.status === 401) throw e;
      const messages = [...fieldErrors(e, 'q'), ...fieldErrors(e, 'ordering'), ...fieldErrors(e, 'page')];
      return [alertBox(messages.length ? messages.join(' ') : e.message)];
    }
    const rows = data.results.map((d) => h('tr', {},
      h('td', {}, h('a', { href: `#/documents/${seg(d.id)}` }, d.label)),
      h('td', {}, d.document_type ? d.document_type.label : ''),
      h('td', { class: 'num' }, String(d.id))));
    const pager = [];
    if (data.previous) pager.push(h('a', { href: hashLink('/documents', { q, ordering, page: page - 1 }), rel: 'prev' }, 'Previous page'));
    if (data.next) pager.push(h('a', { href: hashLink('/documents', { q, ordering, page: page + 1 }), rel: 'next' }, 'Next page'));
    const pages = Math.max(1, Math.ceil(data.count / PAGE_SIZE));
    return [
      h('p', { class: 'count' }, h('span', { id: 'document-count' }, plural(data.count, 'document', 'documents')), pages > 1 ? h('span', { class: 'meta' }, ` · page ${page} of ${pages}`) : null),
      data.results.length
        ? table('Documents', ['Label', 'Type', 'ID'], rows)
        : note(q ? 'No document matches this search.' : 'There are no documents you may see.'),
      pager.length ? h('nav', { class: 'pager', 'aria-label': 'Pages' }, pager) : null,
    ];
  }

  const first = await firstPromise;
  if (!ctx.alive()) return;
  results.replaceChildren(...first);
  const title = q ? `Documents matching “${q}”` : 'Documents';
  showPage(ctx, title, [pageTitle('Documents'), form, status, results]);
  const reload = debounce(async () => {
    if (!ctx.alive()) return;
    const nodes = await load().catch(() => null);
    if (nodes && ctx.alive()) keepFocus(() => results.replaceChildren(...nodes));
  }, 800);
  state.onEvent = (event) => {
    if (eventDocuments(event).length || String(event.name || '').startsWith('acls.')) reload();
  };
}

/** The first requests of a document's page, all at once (`prefetch` asks for the same). */
function documentRequests(id) {
  const base = `/api/v4/documents/${seg(id)}`;
  return [`${base}/`, pageOf(`${base}/metadata/`, 1), pageOf(`${base}/files/`, 1), pageOf(`${base}/workflows/`, 1), `${base}/metadata/history/?page_size=10`];
}

/**
 * Everything the document page shows; parts the user may not see are `{ok: false}`. Three
 * round trips at most: the document, its values, files, workflows and history at once; then
 * its type's associations, the lookups of its values' types and the workflows' details as
 * each answer comes; then the lookups of the types that may be added.
 */
async function loadDocument(id) {
  const base = `/api/v4/documents/${seg(id)}`;
  const lookups = new Map();
  const asked = new Map();
  const askLookup = (mt) => {
    if (asked.has(mt)) return;
    asked.set(mt, settle(get(`${base}/metadata/${seg(mt)}/lookup/`)).then((r) => {
      if (r.ok && Array.isArray(r.value.choices)) lookups.set(mt, r.value.choices);
    }, () => {})); // a 401 has shown the sign-in page already
  };
  const docPromise = get(`${base}/`);
  const valuesPromise = settle(getAll(`${base}/metadata/`)).then((values) => {
    if (values.ok) values.value.forEach((v) => { if (v.metadata_type && v.metadata_type.lookup) askLookup(v.metadata_type_id); });
    return values;
  });
  // Types to offer for a new value: the associated ones (with their "required"), or (when
  // associations are hidden) every type the user may see; the server refuses what does not fit.
  const candidatesPromise = docPromise.then(async (doc) => {
    const assoc = await settle(getAll(`/api/v4/documents/types/${seg(doc.document_type.id)}/metadata-types/`));
    let candidates = [];
    if (assoc.ok) candidates = assoc.value.map((a) => ({ type: a.metadata_type, required: a.required }));
    else {
      const types = await settle(metadataTypes());
      if (types.ok) candidates = types.value.map((t) => ({ type: t, required: false }));
    }
    return { assoc, candidates };
  });
  const [doc, values, { assoc, candidates }, files, workflows, history] = await Promise.all([
    docPromise,
    valuesPromise,
    candidatesPromise,
    settle(getAll(`${base}/files/`)),
    settle(loadWorkflows(id)),
    settle(get(`${base}/metadata/history/?page_size=10`)),
  ]);
  const present = new Set(values.ok ? values.value.map((v) => v.metadata_type_id) : []);
  const addable = candidates.filter((c) => !present.has(c.type.id));
  addable.forEach((c) => { if (c.type.lookup) askLookup(c.type.id); });
  await Promise.all(asked.values());
  return { doc, values, assoc, candidates: addable, lookups, files, workflows, history };
}

/** What the signed-in user may do on a document, in the server's words (`explain` about oneself). */
const DOCUMENT_PERMISSIONS = {
  upload: 'documents.document_file_new',
  access: 'acls.acl_view',
  add: 'metadata.document_metadata_add',
  edit: 'metadata.document_metadata_edit',
  remove: 'metadata.document_metadata_remove',
};

/** `{upload, access, add, edit, remove}`, each true when the server grants it (else false). */
async function documentPermissions(docId) {
  const base = `/api/v5/objects/documents/document/${seg(docId)}/explain/`;
  const answers = await Promise.all(Object.entries(DOCUMENT_PERMISSIONS).map(async ([what, key]) => {
    const r = await settle(get(`${base}?${new URLSearchParams({ permission: key })}`));
    return [what, r.ok && r.value.granted === true];
  }));
  return Object.fromEntries(answers);
}

/** Until the server has answered: nothing offered. */
const NOT_YET = Object.fromEntries(Object.keys(DOCUMENT_PERMISSIONS).map((k) => [k, false]));

async function loadWorkflows(docId) {
  const instances = await getAll(`/api/v4/documents/${seg(docId)}/workflows/`);
  return Promise.all(instances.map(async (inst) => {
    const [template, states, transitions] = await Promise.all([
      settle(get(`/api/v4/workflow-templates/${seg(inst.workflow_id)}/`)),
      settle(getAll(`/api/v4/workflow-templates/${seg(inst.workflow_id)}/states/`)),
      settle(getAll(`/api/v4/documents/${seg(docId)}/workflows/${seg(inst.id)}/transitions/`)),
    ]);
    const stateOf = states.ok ? states.value.find((s) => s.id === inst.current_state_id) : null;
    return {
      inst,
      label: template.ok ? template.value.label : `Workflow ${inst.workflow_id}`,
      stateLabel: inst.current_state_id === null ? 'none' : (stateOf ? stateOf.label : `state ${inst.current_state_id}`),
      transitions,
    };
  }));
}

async function documentPage(ctx, docId) {
  let data = await loadDocument(docId);
  if (!ctx.alive()) return;
  // What the user may do: asked now, while the page is built and shown with nothing offered;
  // what the server grants appears when it answers.
  let may = NOT_YET;
  const firstAnswer = documentPermissions(docId).catch(() => null);
  const title = pageTitle(data.doc.label);
  const status = statusLine('document-status');
  const content = h('div', { class: 'document', 'aria-busy': 'true' });
  const access = h('span');

  const say = (text) => { status.textContent = text; };
  const render = (except = null) => {
    access.replaceChildren(...(may.access ? [' · ', h('a', { href: `#/acl/documents/document/${seg(docId)}` }, 'Access')] : []));
    keepFocus(() => content.replaceChildren(...documentSections(data, may, docId, refresh, say)), { keepEdits: true, except });
  };
  const askPermissions = async (asked = documentPermissions(docId).catch(() => null)) => {
    const answer = await asked;
    if (!answer || !ctx.alive()) return false;
    may = answer;
    return true;
  };
  // `except`: the control whose value was just saved (the server's value replaces it).
  // `again`: ask again what the user may do (someone else's change may have changed it).
  async function refresh(message, except = null, again = false) {
    let fresh;
    try {
      [fresh] = await Promise.all([loadDocument(docId), again ? askPermissions() : null]);
    } catch (e) {
      if (e.status === 401 || !ctx.alive()) return;
      if (e.status === 404) {
        say('This document was deleted or you may no longer see it.');
        access.replaceChildren();
        content.replaceChildren(note('This document is no longer available.'), h('p', {}, h('a', { href: '#/documents' }, 'Back to the documents')));
        return;
      }
      say(`Could not reload the document: ${e.message}`);
      return;
    }
    if (!ctx.alive()) return;
    data = fresh;
    title.textContent = data.doc.label;
    document.title = `${data.doc.label} – docmeta`;
    render(except);
    if (message) say(message);
  }

  content.replaceChildren(...documentSections(data, may, docId, refresh, say));
  showPage(ctx, data.doc.label, [
    h('p', { class: 'breadcrumb' }, h('a', { href: '#/documents' }, 'Documents')),
    title,
    h('p', { class: 'meta' }, `${data.doc.document_type.label} · ID ${data.doc.id}`, access),
    status,
    content,
  ]);
  const someoneChanged = debounce(() => refresh('Updated: someone changed this document.', null, true), 300);
  state.onEvent = (event) => {
    // This page's own changes are shown already (it reloads after each).
    if (eventDocuments(event).includes(docId) && !ownEvent(event)) someoneChanged();
  };
  askPermissions(firstAnswer).then((known) => {
    if (known) render();
    content.removeAttribute('aria-busy');
  });
}

function documentSections(data, may, docId, refresh, say) {
  return [
    metadataSection(data, may, docId, refresh, say),
    filesSection(data, may, docId, refresh, say),
    workflowSection(data, docId, refresh, say),
    historySection(data),
  ];
}

function metadataSection(data, may, docId, refresh, say) {
  const section = h('section', { 'aria-labelledby': 'metadata-title' }, h('h2', { id: 'metadata-title' }, 'Metadata'));
  if (!data.values.ok) {
    section.append(forbiddenNote(data.values, 'the metadata of this document'));
    return section;
  }
  const required = new Map(data.assoc.ok ? data.assoc.value.map((a) => [a.metadata_type.id, a.required]) : []);
  if (!data.assoc.ok && data.assoc.error.status === 403) {
    section.append(note('You may not see which metadata types this document type requires.'));
  }
  // `required` on a value, where the API says so there; else the document type's association.
  const isRequired = (v) => (typeof v.required === 'boolean' ? v.required : required.get(v.metadata_type_id) === true);
  const rows = data.values.value.map((v) => valueRow(v, isRequired(v), data.lookups.get(v.metadata_type_id), may, docId, refresh, say));
  if (rows.length) section.append(h('div', { class: 'values' }, rows));
  else section.append(note('This document has no metadata values you may see.'));
  if (may.add) section.append(addValueForm(data, docId, refresh, say));
  return section;
}

/** A value as a form: editable with Save where the user may edit, with Remove where they may remove. */
function valueRow(v, isRequired, choices, may, docId, refresh, say) {
  const label = v.metadata_type ? v.metadata_type.label : `Metadata type ${v.metadata_type_id}`;
  const id = `value-${v.id}`;
  let control;
  if (!may.edit) {
    control = h('input', { type: 'text', id, name: 'value', value: v.value, readonly: true, autocomplete: 'off', spellcheck: 'false' });
  } else if (Array.isArray(choices)) {
    const options = choices.map((c) => ({ value: c, text: c === '' ? '(empty)' : c }));
    if (!choices.includes(v.value)) options.unshift({ value: v.value, text: v.value === '' ? '(empty)' : `${v.value} (current, not a choice)` });
    control = select({ id, name: 'value' }, options, v.value);
  } else {
    control = h('input', { type: 'text', id, name: 'value', value: v.value, autocomplete: 'off', spellcheck: 'false' });
  }
  const f = field(label, control, { errorId: `${id}-error`, required: isRequired });
  const save = may.edit ? h('button', { type: 'submit', id: `${id}-save`, 'aria-label': `Save ${label}` }, 'Save') : null;
  const remove = may.remove ? button('Remove', { id: `${id}-remove`, class: 'secondary', 'aria-label': `Remove ${label}` }) : null;
  const showError = (e) => {
    const messages = fieldErrors(e, 'value');
    f.error.textContent = messages.length ? messages.join(' ') : e.message;
    control.setAttribute('aria-invalid', 'true');
  };
  const clearError = () => {
    f.error.textContent = '';
    control.removeAttribute('aria-invalid');
  };
  const form = h('form', { class: 'value-row', novalidate: true, 'data-metadata-type': v.metadata_type ? v.metadata_type.name : '' },
    f.label, h('div', { class: 'value-controls' }, control, save, remove), f.error);
  listen(form, 'submit', async (event) => {
    event.preventDefault();
    if (!save) return;
    // Save and Remove write the same value: one request at a time for the row.
    await busy([save, remove], async () => {
      clearError();
      try {
        await api('PATCH', `/api/v4/documents/${seg(docId)}/metadata/${seg(v.id)}/`, { value: control.value });
        await refresh(`Saved ${label}.`, id);
      } catch (e) {
        if (e.status !== 401) showError(e);
      }
    });
  });
  if (remove) listen(remove, 'click', async () => {
    await busy([save, remove], async () => {
      clearError();
      try {
        await api('DELETE', `/api/v4/documents/${seg(docId)}/metadata/${seg(v.id)}/`);
        await refresh(`Removed ${label}.`);
        const next = document.getElementById('add-type');
        if (next && !document.activeElement?.id) next.focus();
      } catch (e) {
        if (e.status !== 401) showError(e);
      }
    });
  });
  return form;
}

function addValueForm(data, docId, refresh, say) {
  const wrap = h('div', { class: 'add-value' }, h('h3', { id: 'add-value-title' }, 'Add a value'));
  if (!data.candidates.length) {
    wrap.append(note('No other metadata type can be added here.'));
    return wrap;
  }
  const typeSelect = select({ id: 'add-type', name: 'metadata_type_id' },
    data.candidates.map((c) => ({ value: c.type.id, text: c.required ? `${c.type.label} (required)` : c.type.label })));
  const valueInput = h('input', { type: 'text', id: 'add-value', name: 'value', autocomplete: 'off', spellcheck: 'false' });
  const list = h('datalist', { id: 'add-value-choices' });
  const fillChoices = () => {
    const choices = data.lookups.get(Number(typeSelect.value));
    list.replaceChildren(...(choices || []).map((c) => h('option', { value: c })));
    if (choices && choices.length) valueInput.setAttribute('list', 'add-value-choices');
    else valueInput.removeAttribute('list');
  };
  listen(typeSelect, 'change', fillChoices);
  fillChoices();
  const t = field('Metadata type', typeSelect);
  const val = field('Value', valueInput);
  const formError = alertBox('');
  formError.id = 'add-value-form-error';
  const addSubmit = h('button', { type: 'submit', id: 'add-value-submit' }, 'Add');
  const form = h('form', { class: 'inline-form', novalidate: true, 'aria-labelledby': 'add-value-title' },
    t.wrapper, val.wrapper, list, h('div', { class: 'actions' }, addSubmit), formError);
  listen(form, 'submit', async (event) => {
    event.preventDefault();
    await busy(addSubmit, async () => {
      t.error.textContent = '';
      val.error.textContent = '';
      formError.textContent = '';
      valueInput.removeAttribute('aria-invalid');
      const chosen = data.candidates.find((c) => String(c.type.id) === typeSelect.value);
      try {
        await api('POST', `/api/v4/documents/${seg(docId)}/metadata/`, { metadata_type_id: Number(typeSelect.value), value: valueInput.value });
        await refresh(`Added ${chosen ? chosen.type.label : 'the value'}.`, 'add-value');
        const again = document.getElementById('add-type');
        (again || document.getElementById('metadata-title'))?.focus();
      } catch (e) {
        if (e.status === 401) return;
        const v = fieldErrors(e, 'value');
        const m = fieldErrors(e, 'metadata_type_id');
        val.error.textContent = v.join(' ');
        t.error.textContent = m.join(' ');
        if (v.length) valueInput.setAttribute('aria-invalid', 'true');
        if (!v.length && !m.length) formError.textContent = e.message;
      }
    });
  });
  wrap.append(form);
  return wrap;
}

function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function filesSection(data, may, docId, refresh, say) {
  const section = h('section', { 'aria-labelledby': 'files-title' }, h('h2', { id: 'files-title' }, 'Files'));
  if (!data.files.ok) {
    section.append(forbiddenNote(data.files, 'the files of this document'));
  } else if (data.files.value.length) {
    section.append(h('ul', { class: 'files' }, data.files.value.map((f) => h('li', {},
      h('a', { href: `/api/v4/documents/${seg(docId)}/files/${seg(f.id)}/download/`, download: f.filename }, f.filename),
      h('span', { class: 'meta' }, ` ${formatSize(f.size)}, ${f.mimetype}`)))));
  } else {
    section.append(note('No file yet.'));
  }
  if (!may.upload) return section;
  const input = h('input', { type: 'file', id: 'file-upload', name: 'file' });
  const f = field('Upload a file', input);
  const submit = h('button', { type: 'submit', id: 'file-upload-submit' }, 'Upload');
  const form = h('form', { class: 'inline-form', novalidate: true }, f.wrapper, h('div', { class: 'actions' }, submit));
  listen(form, 'submit', async (event) => {
    event.preventDefault();
    await busy(submit, async () => {
      f.error.textContent = '';
      if (!input.files || !input.files.length) {
        f.error.textContent = 'Choose a file first.';
        input.focus();
        return;
      }
      const body = new FormData();
      body.append('file', input.files[0], input.files[0].name);
      say('Uploading…');
      try {
        const created = await api('POST', `/api/v4/documents/${seg(docId)}/files/`, body);
        await refresh(`Uploaded ${created.filename}.`);
        document.getElementById('file-upload')?.focus();
      } catch (e) {
        if (e.status === 401) return;
        const messages = fieldErrors(e, 'file');
        f.error.textContent = messages.length ? messages.join(' ') : e.message;
        say('');
      }
    });
  });
  section.append(form);
  return section;
}

function workflowSection(data, docId, refresh, say) {
  const section = h('section', { 'aria-labelledby': 'workflow-title' }, h('h2', { id: 'workflow-title' }, 'Workflow'));
  if (!data.workflows.ok) {
    section.append(forbiddenNote(data.workflows, 'the workflows of this document'));
    return section;
  }
  if (!data.workflows.value.length) {
    section.append(note('No workflow you may see runs on this document.'));
    return section;
  }
  for (const w of data.workflows.value) {
    const error = alertBox('');
    const box = h('div', { class: 'workflow' },
      h('h3', {}, w.label),
      h('p', {}, 'Current state: ', h('strong', {}, w.stateLabel)));
    if (!w.transitions.ok) box.append(forbiddenNote(w.transitions, 'the transitions of this workflow'));
    else if (!w.transitions.value.length) box.append(note('No transition is available now.'));
    else {
      // One transition at a time per workflow: all its buttons wait for the running one.
      const buttons = w.transitions.value.map((t) => button(t.label, { id: `transition-${w.inst.id}-${t.id}` }, () => busy(buttons, async () => {
        error.textContent = '';
        try {
          await api('POST', `/api/v4/documents/${seg(docId)}/workflows/${seg(w.inst.id)}/transitions/`, { transition_id: t.id });
          await refresh(`${w.label}: ${t.label} done.`);
          document.getElementById('workflow-title')?.setAttribute('tabindex', '-1');
          document.getElementById('workflow-title')?.focus();
        } catch (e) {
          if (e.status !== 401) error.textContent = e.message;
        }
      })));
      box.append(h('div', { class: 'actions' }, buttons));
    }
    box.append(error);
    section.append(box);
  }
  return section;
}

function formatTime(text) {
  const t = new Date(text);
  return Number.isNaN(t.getTime()) ? String(text) : t.toLocaleString();
}

function historySection(data) {
  const section = h('section', { 'aria-labelledby': 'history-title' }, h('h2', { id: 'history-title' }, 'History'));
  if (!data.history.ok) {
    section.append(forbiddenNote(data.history, 'the history of this document'));
    return section;
  }
  const changes = data.history.value.results || [];
  if (!changes.length) {
    section.append(note('No change recorded yet.'));
    return section;
  }
  const show = (v) => (v === null || v === undefined ? '—' : (v === '' ? '(empty)' : v));
  section.append(h('ol', { class: 'history' }, changes.map((c) => {
    const who = c.actor ? c.actor.username : 'docmeta';
    const what = c.metadata_type_label ?? `metadata type ${c.metadata_type_id}`;
    let change;
    if (c.hidden) change = ' (values hidden)';
    else if (c.action === 'added') change = `: ${show(c.after)}`;
    else if (c.action === 'removed') change = `: was ${show(c.before)}`;
    else change = `: ${show(c.before)} → ${show(c.after)}`;
    return h('li', {}, h('time', { datetime: c.timestamp }, formatTime(c.timestamp)), ` ${who} ${c.action} ${what}${change}`);
  })));
  if (data.history.value.count > changes.length) section.append(note(`Showing the ${changes.length} latest of ${data.history.value.count} changes.`));
  return section;
}

// ----- administration ---------------------------------------------------------------------------

function adminBreadcrumb(...rest) {
  return h('p', { class: 'breadcrumb' }, h('a', { href: '#/admin' }, 'Administration'), rest.length ? [' › ', rest] : null);
}

async function adminPage(ctx) {
  const links = [
    ['#/admin/metadata-types', 'Metadata types', 'Names, labels, value types, defaults, lookups, validators and parsers.'],
    ['#/admin/document-types', 'Document types', 'Which metadata types each document type has, and which are required.'],
    ['#/admin/users', 'Users', 'Accounts that sign in.'],
    ['#/admin/groups', 'Groups', 'Users grouped, for roles.'],
    ['#/admin/roles', 'Roles', 'Groups and the permissions granted to them.'],
  ];
  showPage(ctx, 'Administration', [
    pageTitle('Administration'),
    h('ul', { class: 'admin-links' }, links.map(([href, text, desc]) => h('li', {}, h('a', { href }, text), h('span', { class: 'meta' }, ` — ${desc}`)))),
  ]);
}

/** A create form: fields by name, POST to `path`, field errors beside each field. */
function createForm({ title, fields, submitText, path, idPrefix, after }) {
  const titleId = `${idPrefix}-title`;
  const formError = alertBox('');
  const parts = fields.map((spec) => {
    let control;
    if (spec.type === 'checkbox') control = h('input', { type: 'checkbox', id: `${idPrefix}-${spec.name}`, name: spec.name });
    else if (spec.type === 'select') control = select({ id: `${idPrefix}-${spec.name}`, name: spec.name }, spec.options);
    else control = h('input', { type: spec.type || 'text', id: `${idPrefix}-${spec.name}`, name: spec.name, autocomplete: spec.autocomplete || 'off' });
    const f = field(spec.label, control);
    if (spec.type === 'checkbox') f.wrapper.classList.add('checkbox');
    return { spec, f };
  });
  const submit = h('button', { type: 'submit' }, submitText);
  const form = h('form', { class: 'inline-form', novalidate: true, 'aria-labelledby': titleId },
    formError, parts.map((p) => p.f.wrapper), h('div', { class: 'actions' }, submit));
  listen(form, 'submit', async (event) => {
    event.preventDefault();
    await busy(submit, async () => {
      formError.textContent = '';
      const body = {};
      for (const { spec, f } of parts) {
        f.error.textContent = '';
        f.control.removeAttribute('aria-invalid');
        if (spec.type === 'checkbox') body[spec.name] = f.control.checked;
        else if (spec.number) body[spec.name] = Number(f.control.value);
        else body[spec.name] = f.control.value;
      }
      try {
        const created = await api('POST', path, body);
        form.reset();
        await after(created);
      } catch (e) {
        if (e.status === 401) return;
        let placed = false;
        for (const { spec, f } of parts) {
          const messages = fieldErrors(e, spec.name);
          if (messages.length) {
            f.error.textContent = messages.join(' ');
            f.control.setAttribute('aria-invalid', 'true');
            placed = true;
          }
        }
        if (!placed) formError.textContent = e.message;
      }
    });
  });
  return h('section', { class: 'create', 'aria-labelledby': titleId }, h('h2', { id: titleId }, title), form);
}

async function metadataTypesPage(ctx) {
  const types = await settle(metadataTypes());
  const status = statusLine();
  let body;
  if (!types.ok) body = forbiddenNote(types, 'the metadata types');
  else if (!types.value.length) body = note('No metadata type you may see.');
  else {
    body = table('Metadata types', ['Label', 'Name', 'Value type', 'Lookup', 'Access'], types.value.map((t) => h('tr', {},
      h('td', {}, h('a', { href: `#/admin/metadata-types/${seg(t.id)}` }, t.label)),
      h('td', {}, h('code', {}, t.name)),
      h('td', {}, t.value_type),
      h('td', {}, t.lookup ? 'Yes' : 'No'),
      h('td', {}, h('a', { href: `#/acl/metadata/metadatatype/${seg(t.id)}`, 'aria-label': `Access to ${t.label}` }, 'Access')))));
  }
  showPage(ctx, 'Metadata types', [
    adminBreadcrumb(), pageTitle('Metadata types'), status,
    h('p', {}, h('a', { href: '#/admin/metadata-types/new', class: 'button-link' }, 'New metadata type')),
    body,
  ]);
}

/** The validator and parser class paths this server knows (from its OpenAPI document). */
async function documentClasses() {
  if (state.classes) return state.classes;
  const doc = await get('/api/v4/openapi.json');
  const props = doc?.components?.schemas?.MetadataTypeIn?.properties || {};
  const paths = (p) => (p && Array.isArray(p.enum) ? p.enum.filter((x) => typeof x === 'string' && x) : null);
  state.classes = { validators: paths(props.validation), parsers: paths(props.parser) };
  return state.classes;
}

function classOptions(paths, current) {
  const options = [{ value: '', text: 'None' }];
  for (const p of paths) options.push({ value: p, text: `${p.split('.').pop()} (${p})` });
  if (current && !paths.includes(current)) options.push({ value: current, text: `${current} (unknown to this server)` });
  return options;
}

async function metadataTypePage(ctx, id) {
  const [typeResult, classes] = await Promise.all([
    id ? get(`/api/v4/metadata/metadata-types/${seg(id)}/`) : Promise.resolve(null),
    settle(documentClasses()),
  ]);
  const t = typeResult || { name: '', label: '', value_type: 'text', default: '', lookup: '', validation: '', validation_arguments: '', parser: '', parser_arguments: '' };
  const heading = id ? `Metadata type: ${t.label}` : 'New metadata type';
  const status = statusLine();
  const classControl = (name, paths) => (paths
    ? select({ id: `mt-${name}`, name }, classOptions(paths, t[name]), t[name])
    : h('input', { type: 'text', id: `mt-${name}`, name, value: t[name], spellcheck: 'false' }));
  const specs = [
    ['name', 'Name', h('input', { type: 'text', id: 'mt-name', name: 'name', value: t.name, spellcheck: 'false', autocomplete: 'off' }), 'Used in templates as document.metadata_value_of.<name>; letters, digits and underscores.'],
    ['label', 'Label', h('input', { type: 'text', id: 'mt-label', name: 'label', value: t.label, autocomplete: 'off' })],
    ['value_type', 'Value type', select({ id: 'mt-value_type', name: 'value_type' }, VALUE_TYPES.map((v) => ({ value: v, text: v })), t.value_type)],
    ['default', 'Default (template)', h('textarea', { id: 'mt-default', name: 'default', rows: '2', spellcheck: 'false' }), 'A template rendering the value a new document gets.'],
    ['lookup', 'Lookup (template)', h('textarea', { id: 'mt-lookup', name: 'lookup', rows: '3', spellcheck: 'false' }), 'A template rendering the allowed values, one per line or comma-separated.'],
    ['validation', 'Validator', classControl('validation', classes.ok ? classes.value.validators : null)],
    ['validation_arguments', 'Validation arguments (YAML)', h('textarea', { id: 'mt-validation_arguments', name: 'validation_arguments', rows: '3', spellcheck: 'false' })],
    ['parser', 'Parser', classControl('parser', classes.ok ? classes.value.parsers : null)],
    ['parser_arguments', 'Parser arguments (YAML)', h('textarea', { id: 'mt-parser_arguments', name: 'parser_arguments', rows: '3', spellcheck: 'false' })],
  ];
  const fields = specs.map(([name, label, control, hint]) => {
    if (control.tagName === 'TEXTAREA') control.value = t[name] || '';
    return { name, f: field(label, control, { hint }) };
  });
  const formError = alertBox('');
  const submit = h('button', { type: 'submit' }, 'Save');
  const form = h('form', { class: 'stacked-form', novalidate: true }, formError, fields.map((x) => x.f.wrapper), h('div', { class: 'actions' }, submit));
  listen(form, 'submit', async (event) => {
    event.preventDefault();
    await busy(submit, async () => {
      formError.textContent = '';
      status.textContent = '';
      const body = {};
      for (const { name, f } of fields) {
        f.error.textContent = '';
        f.control.removeAttribute('aria-invalid');
        body[name] = f.control.value;
      }
      try {
        const saved = id
          ? await api('PATCH', `/api/v4/metadata/metadata-types/${seg(id)}/`, body)
          : await api('POST', '/api/v4/metadata/metadata-types/', body);
        if (!id) {
          if (ctx.alive()) goWith(`#/admin/metadata-types/${seg(saved.id)}`, `Created ${saved.label}.`);
          return;
        }
        status.textContent = `Saved ${saved.label}.`;
      } catch (e) {
        if (e.status === 401) return;
        let placed = false;
        for (const { name, f } of fields) {
          const messages = fieldErrors(e, name);
          if (messages.length) {
            f.error.textContent = messages.join(' ');
            f.control.setAttribute('aria-invalid', 'true');
            placed = true;
          }
        }
        formError.textContent = placed ? 'The metadata type was not saved: see the messages beside the fields.' : e.message;
        if (!placed) formError.focus();
      }
    });
  });
  const nodes = [adminBreadcrumb(h('a', { href: '#/admin/metadata-types' }, 'Metadata types')), pageTitle(heading), status];
  if (!classes.ok) nodes.push(note('The list of validator and parser classes could not be read: type a class path.'));
  nodes.push(form);
  const control = (name) => fields.find((x) => x.name === name).f.control;
  nodes.push(previewSection(id, control('default'), control('lookup')));
  if (id) nodes.push(h('p', {}, h('a', { href: `#/acl/metadata/metadatatype/${seg(id)}` }, 'Access')));
  showPage(ctx, heading, nodes);
}

/**
 * The preview of the default and lookup templates as typed in the form (saved or not), by
 * `POST /api/v4/metadata/metadata-types/preview/`, for a document when one is given. After the
 * first "Preview", each edit of the templates or of the document renders them again.
 */
function previewSection(typeId, defaultControl, lookupControl) {
  const docInput = h('input', { type: 'text', inputmode: 'numeric', id: 'preview-document', name: 'document_id', autocomplete: 'off', spellcheck: 'false' });
  const f = field('Document ID (optional)', docInput, { hint: 'Renders the templates for this document; left empty, for no document.' });
  const out = h('div', { class: 'preview-output', role: 'status', id: 'preview-output' });
  const problems = h('div', { class: 'form-error', role: 'alert', id: 'preview-errors' });
  const submit = h('button', { type: 'submit', id: 'preview-submit' }, 'Preview');
  const form = h('form', { class: 'inline-form', novalidate: true, 'aria-labelledby': 'preview-title' }, f.wrapper, h('div', { class: 'actions' }, submit));
  let asked = 0; // the latest request: earlier answers are dropped
  let live = false;
  const show = (value) => (value === '' ? '(empty)' : value);
  async function preview() {
    asked += 1;
    const mine = asked;
    f.error.textContent = '';
    docInput.removeAttribute('aria-invalid');
    out.setAttribute('aria-busy', 'true');
    const body = { default: defaultControl.value, lookup: lookupControl.value };
    const doc = docInput.value.trim();
    if (doc) body.document_id = /^[0-9]+$/.test(doc) ? Number(doc) : doc;
    if (typeId) body.metadata_type_id = typeId;
    try {
      const r = await api('POST', '/api/v4/metadata/metadata-types/preview/', body, { write: false });
      if (mine !== asked) return;
      const where = doc ? ` for document ${doc}` : '';
      const parts = [];
      if (r.default !== null && r.default !== undefined) parts.push(h('p', { id: 'preview-default' }, `Default${where}: `, h('strong', {}, show(r.default))));
      else if (!r.default_error) parts.push(h('p', { id: 'preview-default' }, 'No default template.'));
      if (Array.isArray(r.lookup_choices)) {
        parts.push(h('p', {}, `Lookup${where}: ${plural(r.lookup_choices.length, 'choice', 'choices')}.`),
          h('ul', { id: 'preview-choices' }, r.lookup_choices.map((c) => h('li', {}, show(c)))));
      } else if (!r.lookup_error) parts.push(h('p', {}, 'No lookup template: any value goes.'));
      out.replaceChildren(...parts);
      problems.replaceChildren(...[['Default', r.default_error], ['Lookup', r.lookup_error]]
        .filter(([, e]) => e).map(([what, e]) => h('p', {}, `${what}: ${e}`)));
    } catch (e) {
      if (e.status === 401 || mine !== asked) return;
      out.replaceChildren();
      const forDoc = fieldErrors(e, 'document_id');
      if (forDoc.length || (e.status === 404 && doc)) {
        f.error.textContent = forDoc.length ? forDoc.join(' ') : `No document ${doc} you may see.`;
        docInput.setAttribute('aria-invalid', 'true');
        problems.replaceChildren();
      } else {
        const messages = [...fieldErrors(e, 'default').map((m) => `Default: ${m}`), ...fieldErrors(e, 'lookup').map((m) => `Lookup: ${m}`)];
        problems.replaceChildren(h('p', {}, messages.length ? messages.join(' ') : (e.status === 403 ? 'You may not preview templates here.' : e.message)));
      }
    } finally {
      if (mine === asked) out.removeAttribute('aria-busy');
    }
  }
  listen(form, 'submit', (event) => {
    event.preventDefault();
    live = true;
    preview();
  });
  const again = debounce(() => { if (live) preview(); }, 500);
  [defaultControl, lookupControl, docInput].forEach((el) => listen(el, 'input', again));
  return h('section', { 'aria-labelledby': 'preview-title' },
    h('h2', { id: 'preview-title' }, 'Preview'),
    note('The default and lookup templates as typed above, rendered before you save them.'),
    form, out, problems);
}

async function documentTypesPage(ctx) {
  const types = await settle(getAll('/api/v4/documents/types/'));
  const status = statusLine();
  let body;
  if (!types.ok) body = forbiddenNote(types, 'the document types');
  else if (!types.value.length) body = note('No document type you may see.');
  else {
    body = table('Document types', ['Label', 'ID', 'Access'], types.value.map((t) => h('tr', {},
      h('td', {}, h('a', { href: `#/admin/document-types/${seg(t.id)}` }, t.label)),
      h('td', { class: 'num' }, String(t.id)),
      h('td', {}, h('a', { href: `#/acl/documents/documenttype/${seg(t.id)}`, 'aria-label': `Access to ${t.label}` }, 'Access')))));
  }
  showPage(ctx, 'Document types', [
    adminBreadcrumb(), pageTitle('Document types'), status, body,
    createForm({
      title: 'New document type', idPrefix: 'new-document-type', submitText: 'Create document type',
      path: '/api/v4/documents/types/', fields: [{ name: 'label', label: 'Label' }],
      after: (created) => { if (ctx.alive()) goWith(`#/admin/document-types/${seg(created.id)}`, `Created ${created.label}.`); },
    }),
  ]);
}

async function documentTypePage(ctx, id) {
  const dt = await get(`/api/v4/documents/types/${seg(id)}/`);
  const status = statusLine();
  const content = h('div');
  const base = `/api/v4/documents/types/${seg(id)}/metadata-types/`;

  async function render(message) {
    const [assoc, types] = await Promise.all([settle(getAll(base)), settle(metadataTypes())]);
    const nodes = [];
    const error = alertBox('');
    if (!assoc.ok) nodes.push(forbiddenNote(assoc, 'the metadata types of this document type'));
    else if (!assoc.value.length) nodes.push(note('No metadata type yet.'));
    else {
      nodes.push(table(`Metadata types of ${dt.label}`, ['Metadata type', 'Required', 'Remove'], assoc.value.map((a) => {
        const label = a.metadata_type.label;
        const box = h('input', { type: 'checkbox', id: `assoc-${a.id}-required`, 'aria-label': `Required: ${label}` });
        box.checked = a.required;
        // One PATCH at a time (the box is disabled while it runs), and the box shows what the
        // server answered, not what was clicked.
        let shown = a.required;
        listen(box, 'change', async () => {
          const wanted = box.checked;
          error.textContent = '';
          await busy(box, async () => {
            try {
              const saved = await api('PATCH', `${base}${seg(a.id)}/`, { required: wanted });
              shown = saved && typeof saved.required === 'boolean' ? saved.required : wanted;
              status.textContent = `${label} is ${shown ? 'now required' : 'no longer required'}.`;
            } catch (e) {
              if (e.status !== 401) error.textContent = `${label}: ${e.message}`;
            } finally {
              box.checked = shown;
            }
          });
        });
        const remove = button('Remove', { class: 'secondary', id: `assoc-${a.id}-remove`, 'aria-label': `Remove ${label}` }, (event) => busy(event.currentTarget, async () => {
          error.textContent = '';
          try {
            await api('DELETE', `${base}${seg(a.id)}/`);
            await render(`Removed ${label} from ${dt.label}.`);
          } catch (e) {
            if (e.status !== 401) error.textContent = `${label}: ${e.message}`;
          }
        }));
        return h('tr', {}, h('td', {}, label), h('td', {}, box), h('td', {}, remove));
      })));
    }
    nodes.push(error);
    if (assoc.ok && types.ok) {
      const present = new Set(assoc.value.map((a) => a.metadata_type.id));
      const rest = types.value.filter((t) => !present.has(t.id));
      if (rest.length) {
        nodes.push(createForm({
          title: 'Add a metadata type', idPrefix: 'new-association', submitText: 'Add',
          path: base,
          fields: [
            { name: 'metadata_type_id', label: 'Metadata type', type: 'select', number: true, options: rest.map((t) => ({ value: t.id, text: t.label })) },
            { name: 'required', label: 'Required', type: 'checkbox' },
          ],
          after: (created) => render(`Added ${created.metadata_type.label} to ${dt.label}.`),
        }));
      }
    }
    if (!ctx.alive()) return;
    keepFocus(() => content.replaceChildren(...nodes));
    if (message) status.textContent = message;
  }

  await render('');
  showPage(ctx, `Document type: ${dt.label}`, [
    adminBreadcrumb(h('a', { href: '#/admin/document-types' }, 'Document types')),
    pageTitle(`Document type: ${dt.label}`), status,
    h('p', {}, h('a', { href: `#/acl/documents/documenttype/${seg(id)}` }, 'Access'), ' · ', h('a', { href: hashLink('/documents', {}) }, 'Documents')),
    h('section', { 'aria-labelledby': 'assoc-title' }, h('h2', { id: 'assoc-title' }, 'Metadata types'), content),
  ]);
}

async function usersPage(ctx) {
  const users = await settle(getAll('/api/v4/users/'));
  const status = statusLine();
  const body = !users.ok ? forbiddenNote(users, 'the users')
    : table('Users', ['Username', 'ID', 'Superuser', 'Active'], users.value.map((u) => h('tr', {},
      h('td', {}, u.username), h('td', { class: 'num' }, String(u.id)), h('td', {}, u.is_superuser ? 'Yes' : 'No'), h('td', {}, u.is_active ? 'Yes' : 'No'))));
  showPage(ctx, 'Users', [
    adminBreadcrumb(), pageTitle('Users'), status, body,
    createForm({
      title: 'New user', idPrefix: 'new-user', submitText: 'Create user', path: '/api/v4/users/',
      fields: [
        { name: 'username', label: 'Username', autocomplete: 'off' },
        { name: 'password', label: 'Password', type: 'password', autocomplete: 'new-password' },
        { name: 'is_superuser', label: 'Superuser', type: 'checkbox' },
      ],
      after: (created) => { if (ctx.alive()) goWith(location.hash, `Created ${created.username}.`); },
    }),
  ]);
}

async function groupsPage(ctx) {
  const groups = await settle(getAll('/api/v4/groups/'));
  const status = statusLine();
  const body = !groups.ok ? forbiddenNote(groups, 'the groups')
    : table('Groups', ['Name', 'ID'], groups.value.map((g) => h('tr', {},
      h('td', {}, h('a', { href: `#/admin/groups/${seg(g.id)}` }, g.name)), h('td', { class: 'num' }, String(g.id)))));
  showPage(ctx, 'Groups', [
    adminBreadcrumb(), pageTitle('Groups'), status, body,
    createForm({
      title: 'New group', idPrefix: 'new-group', submitText: 'Create group', path: '/api/v4/groups/',
      fields: [{ name: 'name', label: 'Name' }],
      after: (created) => { if (ctx.alive()) goWith(`#/admin/groups/${seg(created.id)}`, `Created ${created.name}.`); },
    }),
  ]);
}

/**
 * A member list with "Remove" buttons and an add form: the shape of a group's users and a
 * role's groups and permissions.
 */
function memberSection({ id, title, list, itemLabel, removeName, remove, candidates, addLabel, addText, add, what }) {
  const error = alertBox('');
  const section = h('section', { 'aria-labelledby': `${id}-title` }, h('h2', { id: `${id}-title` }, title));
  if (!list.ok) {
    section.append(forbiddenNote(list, what));
    return section;
  }
  if (!list.value.length) section.append(note('None yet.'));
  else {
    section.append(h('ul', { class: 'members' }, list.value.map((item, i) => h('li', {},
      h('span', {}, itemLabel(item)), ' ',
      button('Remove', { class: 'secondary small', id: `${id}-remove-${i}`, 'aria-label': removeName(item) }, (event) => busy(event.currentTarget, async () => {
        error.textContent = '';
        try {
          await remove(item);
        } catch (e) {
          if (e.status !== 401) error.textContent = e.message;
        }
      }))))));
  }
  section.append(error);
  if (candidates && candidates.ok) {
    if (candidates.value.length) {
      const sel = select({ id: `${id}-add` }, candidates.value);
      const f = field(addLabel, sel);
      const submit = h('button', { type: 'submit' }, addText);
      const form = h('form', { class: 'inline-form', novalidate: true, 'aria-label': `${addText}: ${title}` }, f.wrapper, h('div', { class: 'actions' }, submit));
      listen(form, 'submit', async (event) => {
        event.preventDefault();
        await busy(submit, async () => {
          f.error.textContent = '';
          try {
            await add(sel.value);
          } catch (e) {
            if (e.status !== 401) f.error.textContent = e.message;
          }
        });
      });
      section.append(form);
    }
  } else if (candidates) {
    section.append(forbiddenNote(candidates, 'what could be added'));
  }
  return section;
}

async function groupPage(ctx, id) {
  const group = await get(`/api/v4/groups/${seg(id)}/`);
  const status = statusLine();
  const content = h('div');
  async function render(message) {
    const [members, users] = await Promise.all([settle(getAll(`/api/v4/groups/${seg(id)}/users/`)), settle(getAll('/api/v4/users/'))]);
    const present = new Set(members.ok ? members.value.map((u) => u.id) : []);
    const candidates = users.ok ? { ok: true, value: users.value.filter((u) => !present.has(u.id)).map((u) => ({ value: u.id, text: u.username })) } : users;
    const section = memberSection({
      id: 'members', title: 'Members', list: members, what: 'the members of this group',
      itemLabel: (u) => u.username, removeName: (u) => `Remove ${u.username} from ${group.name}`,
      remove: async (u) => { await api('POST', `/api/v4/groups/${seg(id)}/users/remove/`, { user_id: u.id }); await render(`Removed ${u.username}.`); },
      candidates, addLabel: 'User', addText: 'Add member',
      add: async (userId) => {
        await api('POST', `/api/v4/groups/${seg(id)}/users/add/`, { user_id: Number(userId) });
        const u = users.value.find((x) => String(x.id) === String(userId));
        await render(`Added ${u ? u.username : 'the user'}.`);
      },
    });
    if (!ctx.alive()) return;
    keepFocus(() => content.replaceChildren(section));
    if (message) status.textContent = message;
  }
  await render('');
  showPage(ctx, `Group: ${group.name}`, [adminBreadcrumb(h('a', { href: '#/admin/groups' }, 'Groups')), pageTitle(`Group: ${group.name}`), status, content]);
}

async function rolesPage(ctx) {
  const roles = await settle(getAll('/api/v4/roles/'));
  const status = statusLine();
  const body = !roles.ok ? forbiddenNote(roles, 'the roles')
    : table('Roles', ['Label', 'ID'], roles.value.map((r) => h('tr', {},
      h('td', {}, h('a', { href: `#/admin/roles/${seg(r.id)}` }, r.label)), h('td', { class: 'num' }, String(r.id)))));
  showPage(ctx, 'Roles', [
    adminBreadcrumb(), pageTitle('Roles'), status, body,
    createForm({
      title: 'New role', idPrefix: 'new-role', submitText: 'Create role', path: '/api/v4/roles/',
      fields: [{ name: 'label', label: 'Label' }],
      after: (created) => { if (ctx.alive()) goWith(`#/admin/roles/${seg(created.id)}`, `Created ${created.label}.`); },
    }),
  ]);
}

async function rolePage(ctx, id) {
  const role = await get(`/api/v4/roles/${seg(id)}/`);
  const status = statusLine();
  const content = h('div');
  const base = `/api/v4/roles/${seg(id)}`;
  async function render(message) {
    const [groups, allGroups, perms, allPerms] = await Promise.all([
      settle(getAll(`${base}/groups/`)), settle(getAll('/api/v4/groups/')),
      settle(getAll(`${base}/permissions/`)), settle(getAll('/api/v4/permissions/')),
    ]);
    const groupIds = new Set(groups.ok ? groups.value.map((g) => g.id) : []);
    const permKeys = new Set(perms.ok ? perms.value.map((p) => p.pk) : []);
    const groupSection = memberSection({
      id: 'role-groups', title: 'Groups', list: groups, what: 'the groups of this role',
      itemLabel: (g) => g.name, removeName: (g) => `Remove ${g.name} from ${role.label}`,
      remove: async (g) => { await api('POST', `${base}/groups/remove/`, { group_id: g.id }); await render(`Removed ${g.name}.`); },
      candidates: allGroups.ok ? { ok: true, value: allGroups.value.filter((g) => !groupIds.has(g.id)).map((g) => ({ value: g.id, text: g.name })) } : allGroups,
      addLabel: 'Group', addText: 'Add group',
      add: async (groupId) => { await api('POST', `${base}/groups/add/`, { group_id: Number(groupId) }); await render('Added the group.'); },
    });
    const permSection = memberSection({
      id: 'role-permissions', title: 'Permissions everywhere', list: perms, what: 'the permissions of this role',
      itemLabel: (p) => `${p.label} (${p.pk})`, removeName: (p) => `Revoke ${p.label} from ${role.label}`,
      remove: async (p) => { await api('POST', `${base}/permissions/remove/`, { permission: p.pk }); await render(`Revoked ${p.label}.`); },
      candidates: allPerms.ok ? { ok: true, value: allPerms.value.filter((p) => !permKeys.has(p.pk)).map((p) => ({ value: p.pk, text: `${p.label} (${p.pk})` })) } : allPerms,
      addLabel: 'Permission', addText: 'Grant',
      add: async (pk) => { await api('POST', `${base}/permissions/add/`, { permission: pk }); await render('Granted.'); },
    });
    if (!ctx.alive()) return;
    keepFocus(() => content.replaceChildren(groupSection, note('Permissions granted here hold on every object; grant on one object from its Access page.'), permSection));
    if (message) status.textContent = message;
  }
  await render('');
  showPage(ctx, `Role: ${role.label}`, [adminBreadcrumb(h('a', { href: '#/admin/roles' }, 'Roles')), pageTitle(`Role: ${role.label}`), status, content]);
}

// ----- access control lists ---------------------------------------------------------------------

/** The label of an object, where a route reads it; else its kind and id. */
async function objectLabel(app, model, id) {
  const routes = {
    'documents/document': `/api/v4/documents/${seg(id)}/`,
    'documents/documenttype': `/api/v4/documents/types/${seg(id)}/`,
    'metadata/metadatatype': `/api/v4/metadata/metadata-types/${seg(id)}/`,
    'cabinets/cabinet': `/api/v4/cabinets/${seg(id)}/`,
    'permissions/role': `/api/v4/roles/${seg(id)}/`,
    'document_states/workflow': `/api/v4/workflow-templates/${seg(id)}/`,
  };
  const path = routes[`${app}/${model}`];
  if (path) {
    const r = await settle(get(path));
    if (r.ok && (r.value.label || r.value.name)) return { label: r.value.label || r.value.name, back: app === 'documents' && model === 'document' ? `#/documents/${seg(id)}` : null };
  }
  return { label: `${app}.${model} ${id}`, back: null };
}

async function aclPage(ctx, app, model, id) {
  if (!/^[a-z_]+$/.test(app) || !/^[a-z_]+$/.test(model)) throw new ApiError(404, { detail: 'No such kind of object.' });
  const base = `/api/v5/objects/${seg(app)}/${seg(model)}/${seg(id)}`;
  const object = await objectLabel(app, model, id);
  const status = h('p', { class: 'status', role: 'status' }, '');
  const content = h('div');
  const explain = h('div');
  const heading = `Access to ${object.label}`;

  async function render(message) {
    const [acls, perms, roles, users] = await Promise.all([
      settle(getAll(`${base}/acls/`)),
      settle(getAll(`/api/v5/objects/${seg(app)}/${seg(model)}/permissions/`)),
      settle(getAll('/api/v4/roles/')),
      settle(getAll('/api/v4/users/')),
    ]);
    const nodes = [];
    const error = alertBox('');
    const listSection = h('section', { 'aria-labelledby': 'acl-title' }, h('h2', { id: 'acl-title' }, 'Granted here'));
    if (!acls.ok) listSection.append(forbiddenNote(acls, 'the access control list of this object'));
    else if (!acls.value.length) listSection.append(note('No role holds a permission on this object itself (it may inherit from another object).'));
    else {
      listSection.append(table('Access control list', ['Role', 'Permissions'], acls.value.map((acl) => h('tr', {},
        h('td', {}, acl.role.label),
        h('td', {}, acl.permissions.length ? h('ul', { class: 'members' }, acl.permissions.map((p) => h('li', {},
          h('span', {}, p.label), ' ',
          button('Revoke', { class: 'secondary small', id: `revoke-${acl.id}-${p.pk.replace(/[^a-z0-9_]/gi, '_')}`, 'aria-label': `Revoke ${p.label} from ${acl.role.label}` }, (event) => busy(event.currentTarget, async () => {
            error.textContent = '';
            try {
              await api('POST', `${base}/acls/${seg(acl.id)}/permissions/remove/`, { permission: p.pk });
              await render(`Revoked ${p.label} from ${acl.role.label}.`);
            } catch (e) {
              if (e.status !== 401) error.textContent = e.message;
            }
          }))))) : note('No permission.'))))));
    }
    listSection.append(error);
    nodes.push(listSection);

    if (acls.ok && perms.ok && roles.ok && roles.value.length && perms.value.length) {
      const roleSelect = select({ id: 'grant-role', name: 'role_id' }, roles.value.map((r) => ({ value: r.id, text: r.label })));
      const permSelect = select({ id: 'grant-permission', name: 'permission' }, perms.value.map((p) => ({ value: p.pk, text: p.label })));
      const rf = field('Role', roleSelect);
      const pf = field('Permission to grant', permSelect);
      const formError = alertBox('');
      const grant = h('button', { type: 'submit', id: 'grant-submit' }, 'Grant');
      const form = h('form', { class: 'inline-form', novalidate: true, 'aria-labelledby': 'grant-title' }, rf.wrapper, pf.wrapper, h('div', { class: 'actions' }, grant), formError);
      listen(form, 'submit', async (event) => {
        event.preventDefault();
        await busy(grant, async () => {
          formError.textContent = '';
          const roleId = Number(roleSelect.value);
          const perm = perms.value.find((p) => p.pk === permSelect.value);
          const role = roles.value.find((r) => r.id === roleId);
          try {
            let acl = acls.value.find((a) => a.role.id === roleId);
            if (!acl) acl = await api('POST', `${base}/acls/`, { role_id: roleId });
            await api('POST', `${base}/acls/${seg(acl.id)}/permissions/add/`, { permission: permSelect.value });
            await render(`Granted ${perm ? perm.label : permSelect.value} to ${role ? role.label : 'the role'}.`);
            document.getElementById('grant-role')?.focus();
          } catch (e) {
            if (e.status === 401) return;
            const messages = [...fieldErrors(e, 'permission'), ...fieldErrors(e, 'role_id')];
            formError.textContent = messages.length ? messages.join(' ') : e.message;
          }
        });
      });
      nodes.push(h('section', { 'aria-labelledby': 'grant-title' }, h('h2', { id: 'grant-title' }, 'Grant a permission'), form));
    } else if (acls.ok && !roles.ok) {
      nodes.push(forbiddenNote(roles, 'the roles, so you cannot grant here'));
    }
    if (!ctx.alive()) return;
    keepFocus(() => content.replaceChildren(...nodes));
    if (!explain.firstChild) explain.append(explainSection(perms, users, roles));
    if (message) status.textContent = message;
  }

  function explainSection(perms, users, roles) {
    // The server's sentence names roles by id ("role 1"): named by their labels where known.
    const named = (text) => String(text).replace(/\brole (\d+)\b/g, (whole, n) => {
      const role = roles.ok ? roles.value.find((r) => String(r.id) === n) : null;
      return role ? `role “${role.label}” (${n})` : whole;
    });
    const section = h('section', { 'aria-labelledby': 'explain-title' }, h('h2', { id: 'explain-title' }, 'Why can this user see it?'));
    if (!perms.ok) {
      section.append(forbiddenNote(perms, 'the permissions of this kind of object'));
      return section;
    }
    const people = users.ok ? users.value : [state.user];
    const userSelect = select({ id: 'explain-user', name: 'user_id' }, people.map((u) => ({ value: u.id, text: u.username })), state.user.id);
    const preferred = perms.value.find((p) => /_view$/.test(p.pk) && p.pk.includes(model)) || perms.value[0];
    const permSelect = select({ id: 'explain-permission', name: 'permission' }, perms.value.map((p) => ({ value: p.pk, text: p.label })), preferred ? preferred.pk : '');
    const uf = field('User', userSelect);
    const pf = field('Permission', permSelect);
    const answer = h('div', { class: 'explain-answer', role: 'status', id: 'explain-answer' });
    const form = h('form', { class: 'inline-form', novalidate: true, 'aria-labelledby': 'explain-title' }, uf.wrapper, pf.wrapper, h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'explain-submit' }, 'Explain')));
    listen(form, 'submit', async (event) => {
      event.preventDefault();
      answer.setAttribute('aria-busy', 'true');
      const query = new URLSearchParams({ user_id: userSelect.value, permission: permSelect.value });
      try {
        const r = await get(`${base}/explain/?${query}`);
        const who = userSelect.selectedOptions[0]?.textContent || 'The user';
        const perm = permSelect.selectedOptions[0]?.textContent || permSelect.value;
        answer.replaceChildren(
          h('p', { class: r.granted ? 'granted' : 'denied' }, h('strong', {}, r.granted ? 'Granted. ' : 'Not granted. '), `${who} — ${perm}: `, named(r.description || '')),
          Array.isArray(r.checked) && r.checked.length
            ? h('div', {}, h('p', {}, 'Objects checked:'), h('ul', {}, r.checked.map((o) => h('li', {}, `${o.app_label}.${o.model_name} ${o.object_id ?? o.id ?? ''}`))))
            : null);
      } catch (e) {
        if (e.status === 401) return;
        answer.replaceChildren(h('p', { class: 'form-error' }, e.message));
      } finally {
        answer.removeAttribute('aria-busy');
      }
    });
    section.append(form, answer);
    return section;
  }

  await render('');
  const crumbs = object.back ? h('p', { class: 'breadcrumb' }, h('a', { href: object.back }, object.label)) : null;
  showPage(ctx, heading, [crumbs, pageTitle(heading), h('p', { class: 'meta' }, `${app}.${model} ${id}`), status, content, explain]);
}

// ----- start ----------------------------------------------------------------------------------

async function start() {
  const skip = document.getElementById('skip-link');
  if (skip) {
    listen(skip, 'click', (event) => {
      event.preventDefault();
      const target = main().querySelector('h1') || main();
      target.focus();
    });
  }
  // The bare address shows the documents (replaceState: no hashchange, no second route).
  if (!location.hash.startsWith('#/') || location.hash === '#/') history.replaceState(null, '', '#/documents');
  window.addEventListener('hashchange', () => {
    if (state.user) route();
  });
  // The first page's data is asked for alongside the session (one round trip instead of two);
  // a signed-out visitor's requests answer 401 (without a Basic challenge) and are dropped.
  // The session first: the page waits for it.
  const session = loadSession();
  prefetchFirstPage();
  const { ok, message } = await session;
  if (ok) await startApp();
  else {
    prefetched.clear();
    signInPage(message || '');
  }
}

/** `prefetch` of what the page in the address asks for first (the documents list, a document). */
function prefetchFirstPage() {
  const { parts, params } = parseHash();
  if (parts[0] === 'documents' && parts.length === 1) {
    prefetch(documentsUrl(params));
    prefetch(pageOf(METADATA_TYPES, 1));
  } else if (parts[0] === 'documents' && parts.length === 2 && positiveInt(parts[1])) {
    documentRequests(positiveInt(parts[1])).forEach(prefetch);
  }
}

start();
