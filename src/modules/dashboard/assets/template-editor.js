// Herald template editor: the preview follows the form as you type (the Preview button works without it).
document.addEventListener('DOMContentLoaded', () => {
  const form = document.querySelector('[data-preview-form]');
  const button = form && form.querySelector('[data-preview-button]');
  if (!form || !button || typeof form.requestSubmit !== 'function') return;
  let waiting;
  const refresh = () => {
    clearTimeout(waiting);
    waiting = setTimeout(() => form.requestSubmit(button), 400);
  };
  form.addEventListener('input', (event) => {
    if (event.target instanceof Element && event.target.matches('input, textarea')) refresh();
  });
  // The saved version is shown first; show what the form holds (unsaved changes after an error) at once.
  refresh();
});
