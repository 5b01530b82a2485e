// Live updates of the operator page: the server says when the memory, a dream or a
// proposal changed (Server-Sent Events); the page then fetches itself again and swaps
// its main part, unless the person is typing in a form.
(function () {
  'use strict';
  var main = document.querySelector('main');
  var badge = document.getElementById('live');
  if (!main || main.getAttribute('data-live') === '0' || !window.EventSource) { return; }
  // Once a person has typed or chosen anything in a form, the page is theirs: a swap
  // would throw their words away even after they clicked elsewhere.
  var edited = false;
  document.addEventListener('input', function (event) {
    if (event.target.form) { edited = true; }
  });
  var source = new EventSource('/events');
  source.addEventListener('hello', function () { badge.textContent = 'live'; });
  source.addEventListener('change', function () {
    var active = document.activeElement;
    if (edited || (active && active.form && active.value)) {
      badge.textContent = 'changed since: reload to see it (your form is kept)';
      return;
    }
    fetch(window.location.href, { credentials: 'same-origin' }).then(function (response) {
      return response.text();
    }).then(function (text) {
      var fresh = new DOMParser().parseFromString(text, 'text/html').querySelector('main');
      if (fresh) {
        document.querySelector('main').replaceWith(fresh);
        badge.textContent = 'updated ' + new Date().toLocaleTimeString();
      }
    });
  });
  source.onerror = function () { badge.textContent = 'live: reconnecting'; };
  // A page left for another keeps no stream open: a browser allows six connections to a
  // host, and streams of pages kept for the back button would hold every one of them.
  window.addEventListener('pagehide', function () { source.close(); });
  window.addEventListener('pageshow', function (event) {
    if (event.persisted) { window.location.reload(); }
  });
}());
