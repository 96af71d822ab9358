// Search result excerpts for a site read from disk (file://), where browsers refuse fetch():
// Sphinx's search fetches each result's page to cut an excerpt from its [role="main"] block;
// conf.py writes the pages' main text to search_excerpts.js, and this answers those fetches.
(function () {
  if (window.location.protocol !== "file:" || !window.PEARLSTATS_PAGE_TEXT) return;
  const root = new URL(document.documentElement.dataset.content_root || "./", window.location.href);
  const pageFetch = window.fetch ? window.fetch.bind(window) : null;
  const escape = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  window.fetch = function (resource, options) {
    const url = new URL(typeof resource === "string" ? resource : resource.url, window.location.href);
    const page = decodeURIComponent(url.pathname).slice(decodeURIComponent(root.pathname).length);
    const text = window.PEARLSTATS_PAGE_TEXT[page];
    if (text !== undefined) {
      const html = `<html><body><div role="main">${escape(text)}</div></body></html>`;
      return Promise.resolve(new Response(html, { headers: { "Content-Type": "text/html" } }));
    }
    return pageFetch ? pageFetch(resource, options) : Promise.reject(new TypeError(url.href));
  };
})();
