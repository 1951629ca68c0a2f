// ESLint's configuration for the report page's script and its tests (tests/suites/report_js.sh
// runs it from the repository root: eslint -c tests/browser/eslint.config.js).
'use strict';
const js = require('@eslint/js');

const browser = {window: 'readonly', document: 'readonly', getComputedStyle: 'readonly', ODU: 'readonly'};
const node = {require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly', console: 'readonly'};

module.exports = [
  js.configs.recommended,
  {
    files: ['lib/render/report.js'],
    languageOptions: {ecmaVersion: 2017, sourceType: 'script', globals: browser},
  },
  {
    // the page's arithmetic: loaded by the page (ODU) and by node's tests (module.exports)
    files: ['lib/render/report_util.js'],
    languageOptions: {ecmaVersion: 2017, sourceType: 'script', globals: {module: 'writable'}},
  },
  {
    files: ['tests/js/**/*.js', 'tests/browser/*.js'],
    languageOptions: {ecmaVersion: 2022, sourceType: 'commonjs', globals: node},
  },
  {
    // puppeteer's page.evaluate() runs these functions inside the page
    files: ['tests/browser/report_test.js'],
    languageOptions: {globals: Object.assign({performance: 'readonly', MouseEvent: 'readonly', WheelEvent: 'readonly',
                                              requestAnimationFrame: 'readonly', Event: 'readonly', innerHeight: 'readonly'}, browser)},
  },
  {
    rules: {'no-unused-vars': ['error', {args: 'none'}], eqeqeq: 'error', 'no-var': 'off'},
  },
];
