// Runs before the first paint (a classic script in <head>), so a page with a saved dark or
// light theme never flashes the other one. main.js changes the theme afterwards.
(function () {
  try {
    var theme = localStorage.getItem("corral.theme");
    if (theme === "light" || theme === "dark") document.documentElement.dataset.theme = theme;
  } catch (error) {
    // storage blocked: the system theme applies
  }
})();
