// agentctl ui: the pages are whole without this script; it adds copy
// buttons and marks the page as painted (tests wait for that). Recorded
// text is only ever written with textContent.
'use strict';
(function () {
  function copyButtons() {
    document.querySelectorAll('[data-copy]').forEach(function (btn) {
      btn.addEventListener('click', function () {
        var src = document.getElementById(btn.getAttribute('data-copy'));
        if (!src || !navigator.clipboard) return;
        navigator.clipboard.writeText(src.textContent).then(function () {
          btn.textContent = 'copied';
          setTimeout(function () { btn.textContent = 'copy'; }, 1500);
        }, function () {});
      });
    });
  }
  window.agentctlUI = window.agentctlUI || {};
  function ready() {
    copyButtons();
    (window.agentctlUI.onready || []).forEach(function (fn) { fn(); });
    requestAnimationFrame(function () { document.body.setAttribute('data-painted', ''); });
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', ready);
  else ready();
})();
