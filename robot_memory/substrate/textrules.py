# Copyright 2026 robot_memory maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Text rules of the substrate: normalising, tokens, safe FTS5 queries and type classification.

All pure functions. ``fts_query`` turns anything a user types into an FTS5 expression that
cannot fail to parse: every word is quoted, so ``NEAR``, ``AND``, ``col:`` filters,
quotes and unbalanced parentheses are plain words or dropped punctuation.
"""

import functools
import hashlib
import itertools
import math
import re
from typing import AbstractSet
from typing import Optional
import unicodedata

_WORD = re.compile(r'\w+', re.UNICODE)
_STOPWORDS = frozenset(
    'a an and are as at be been by for from has have how i in is it its of on or that the '
    'then this to was were what when where which who why will with do does did my me we our '
    "you your there their it's".split())
# What makes a text a secret (see looks_secret): a word that names a credential; a PIN
# (never "pin the map" nor "GPIO pin 13"); a code or combination that opens something
# (never "error code 42" nor "code review"); or a key or token by its shape.
_OPENS = (r'(?:alarm|door|gate|garage|padlock|lock|keypad|entry|entrance|access|security|'
          r'unlock|cabinet|locker|vault|wi-?fi)')
# Also after "code for the": "safe" and "building" alone would take "fail-safe code" and
# "building code" for secrets.
_OPENED = r'(?:' + _OPENS[3:-1] + r'|safe|building|house|flat|office|room)'
_SECRET = re.compile(
    r'\b(?:passwords?|passwd|passphrases?|pass ?codes?|pass ?phrases?|api[ _-]?keys?|'
    r'secrets?|tokens?|private keys?|credentials?|pin codes?|pin numbers?|one-time codes?|'
    r'otp|ssh keys?|access keys?|secret keys?|wi-?fi keys?|network keys?|'
    + _OPENS + r' (?:codes?|pins?|combinations?|passwords?)|'
    r'(?:codes?|combinations?|pins?) (?:for|to|of) (?:the |my |our |a |an )?' + _OPENED + r')\b'
    r'|\b(?:pwd|login|user(?:name)?/password)\s*[:=]\s*\S'
    r'|\bpins? *(?:is|was|[:=#]) *\d{3,}\b'
    r'|\bpins? \d{4,8}\b'
    r'|\bPINs?\b', re.IGNORECASE)
_CASE_SENSITIVE_PIN = re.compile(r'\bPINs?\b')
_SECRET_SHAPE = re.compile(
    r'\bAKIA[0-9A-Z]{16}\b'  # AWS access key id
    r'|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_\w{20,}'  # GitHub tokens
    r'|\bxox[abposr]-[A-Za-z0-9-]{10,}'  # Slack
    r'|\b[sr]k[-_](?:live_|test_|proj-)?[A-Za-z0-9_-]{20,}'  # OpenAI, Stripe
    r'|\bAIza[0-9A-Za-z_-]{35}'  # Google API key
    r'|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}'  # JWT
    r'|-----BEGIN [A-Z ]*PRIVATE KEY-----'
    r'|\bBearer +[A-Za-z0-9._~+/=-]{16,}'
    # A long run of letters and digits in both cases: a generated key (ids and digests,
    # lower-case hex, are not).
    r'|(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Z])(?=[\w-]*[a-z])[A-Za-z0-9_-]{32,}(?![\w-])')
_TIMESTAMP = re.compile(r'\b\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2})?|\b\d{1,2}:\d{2}(?::\d{2})?\b|'
                        r'\b(?:yesterday|today|this (?:morning|afternoon|evening)|last night|'
                        r'just now|tonight)\b', re.IGNORECASE)
_WORKING = re.compile(r'^\s*(?:currently|now|right now|in progress|todo|to-do|pending|waiting|'
                      r'blocked|next step|working on|task)\b|\b(?:in progress|waiting for|'
                      r'blocked (?:on|by)|currently (?:doing|running|executing|working)|'
                      r'next step is|is pending)\b', re.IGNORECASE)
_PROCEDURE = re.compile(r'^\s*(?:to|how to)\s+(?P<skill>[^:]{2,120}?)\s*[:,]\s*(?P<steps>.+)$',
                        re.IGNORECASE | re.DOTALL)
_STEP_SPLIT = re.compile(r'\s*(?:;|\n|(?:,\s*)?\b(?:then|after that|afterwards|next|finally|'
                         r'and then)\b[,:]?|(?:^|\s)\d+[.)]\s)\s*', re.IGNORECASE)
_STEP_WORDS = re.compile(r'\b(?:first|then|finally|step \d|afterwards)\b|(?:^|\n)\s*\d+[.)]\s',
                         re.IGNORECASE)
_FACT = re.compile(
    r'^\s*(?P<subject>.+?)\s+(?P<predicate>is not|isn\'t|is|are not|aren\'t|are|was|were|'
    r'prefers?|likes?|dislikes?|has|have|needs?|uses?|requires?|must not|must|should not|'
    r'should|can not|cannot|can|works best (?:at|with|on)|lives in|belongs to|'
    r'means|equals)\s+(?P<object>.+?)\s*[.!]?\s*$', re.IGNORECASE | re.DOTALL)


def normalise(text: str) -> str:
    """Text folded for comparison: NFKC, case-folded, whitespace collapsed, end punctuation off."""
    folded = unicodedata.normalize('NFKC', text).casefold()
    return ' '.join(folded.split()).rstrip(' .!?;,')


def content_hash(text: str) -> str:
    """SHA-256 (hex, first 32 digits) of the normalised text: the exact-duplicate key."""
    return hashlib.sha256(normalise(text).encode('utf-8')).hexdigest()[:32]


def tokens(text: str) -> list:
    """Lower-case word tokens, in order."""
    return [token.casefold() for token in _WORD.findall(unicodedata.normalize('NFKC', text))]


@functools.lru_cache(maxsize=65_536)
def token_set(text: str) -> frozenset:
    """Return the set of ``text``'s word tokens (cached: a peer's texts come back every sync)."""
    return frozenset(tokens(text))


def content_tokens(text: str) -> set:
    """Return the set of word tokens without stop words (falls back to all tokens)."""
    words = tokens(text)
    meaningful = {word for word in words if word not in _STOPWORDS}
    return meaningful or set(words)


def jaccard(left: AbstractSet, right: AbstractSet) -> float:
    """Token-set Jaccard similarity in [0, 1] (two empty sets count as 0)."""
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def fts_query(text: str, max_terms: int = 32, operator: str = 'OR') -> Optional[str]:
    """Return a safe FTS5 query (words joined by OR or AND) of ``text``, or None without words."""
    if operator not in ('OR', 'AND'):
        raise ValueError(f'operator must be OR or AND, got {operator!r}')
    terms = query_terms(text, max_terms)
    if not terms:
        return None
    return f' {operator} '.join('"' + word.replace('"', '""') + '"' for word in terms)


def query_terms(text: str, max_terms: int = 32) -> list:
    """Return the words a search for ``text`` looks for: distinct, in order, stop words out."""
    seen, terms = set(), []
    for word in tokens(text):
        if word in seen:
            continue
        seen.add(word)
        terms.append(word)
    meaningful = [word for word in terms if word not in _STOPWORDS] or terms
    return meaningful[:max_terms]


def overlap_query(words: set, min_shared: int, max_clauses: int = 64) -> Optional[str]:
    """
    Return an FTS5 query for records holding at least ``min_shared`` of ``words``, or None.

    An OR of ANDs, one per way of leaving out the words allowed to be missing; None when
    that would take more than ``max_clauses`` clauses. Unlike an OR of every word ranked by
    BM25, it reads no record that could not reach the overlap.
    """
    terms = sorted(words)
    missing = len(terms) - max(1, min_shared)
    if not terms or missing < 0 or math.comb(len(terms), missing) > max_clauses:
        return None
    quoted = ['"' + word.replace('"', '""') + '"' for word in terms]
    clauses = ['(' + ' AND '.join(kept) + ')'
               for kept in itertools.combinations(quoted, len(terms) - missing)]
    return ' OR '.join(clauses)


def looks_secret(text: str) -> bool:
    """Whether the text holds or names a credential: password, PIN, door code, key, token."""
    for match in _SECRET.finditer(text):
        # "PIN" in capitals alone is the number; "pin" in lower case alone is the object.
        if match.group(0).casefold().rstrip('s') != 'pin' or \
                _CASE_SENSITIVE_PIN.fullmatch(match.group(0)):
            return True
    return bool(_SECRET_SHAPE.search(text))


def split_steps(text: str) -> list:
    """Return the steps of a procedure written as prose or a list ("first A, then B; finally C")."""
    body = re.sub(r'^\s*first\b[,:]?\s*', '', text.strip(), flags=re.IGNORECASE)
    parts = [part.strip(' ,.;:') for part in _STEP_SPLIT.split(body)]
    parts = [re.sub(r'^(?:first|then|finally|next)\b[,:]?\s*', '', part, flags=re.IGNORECASE)
             for part in parts if part and part.strip(' ,.;:')]
    return [part for part in parts if part]


def parse_procedure(text: str) -> Optional[tuple]:
    """``(skill, steps)`` of "to X: first A, then B", or None when the text is no procedure."""
    match = _PROCEDURE.match(text)
    if match:
        steps = split_steps(match.group('steps'))
        if len(steps) >= 2 or _STEP_WORDS.search(match.group('steps')):
            return match.group('skill').strip(), steps or [match.group('steps').strip()]
    if _STEP_WORDS.search(text):
        steps = split_steps(text)
        if len(steps) >= 2:
            return ' '.join(tokens(steps[0])[:6]) or 'procedure', steps
    return None


def parse_fact(text: str) -> Optional[tuple]:
    """``(subject, predicate, object)`` of "X is Y" / "X prefers Y", or None."""
    match = _FACT.match(text)
    if not match:
        return None
    predicate = '_'.join(match.group('predicate').casefold().replace("n't", ' not').split())
    subject = normalise(match.group('subject'))
    if not subject or len(subject) > 200:
        return None
    return subject, predicate, match.group('object').strip()


# Predicates (as parse_fact writes them, or as a caller names them in a payload) that hold one
# value at a time for a subject: a new value replaces the old one.
SINGLE_VALUED_PREDICATES = frozenset(
    'location located_at located_in is_at is_in lives_in position status state mode set_to '
    'count equals value level version belongs_to owner name address ip_address '
    'serial_number battery_level temperature speed max_speed capacity'.split())
# Predicates that hold many values side by side ("Ben prefers tea" and "Ben prefers the
# window seat" are both true).
MULTI_VALUED_PREDICATES = frozenset(
    'prefers prefer likes like dislikes dislike has have needs need uses use requires require '
    'must must_not should should_not can cannot can_not knows contains includes supports '
    'works_best_with works_best_on works_best_at related_to is_not are_not'.split())
# A copula ("is", "are") may hold one value ("the lift is slow" / "fast") or many ("Ben is
# tall", "Ben is a technician"): unknown, unless its object names a single-valued facet (a
# place, an on/off-like state, a number).
COPULAS = frozenset(('is', 'are', 'was', 'were'))
_PLACE = re.compile(r'^(?:in|at|on|inside|outside|near|under|underneath|behind|beside|by|'
                    r'next to|in front of|above|below|located)\s+\S|^(?:upstairs|downstairs)$',
                    re.IGNORECASE)
_AMOUNT = re.compile(r'^-?\d+(?:[.,]\d+)?\s*(?:%|[^\W\d]{1,12})?$')
_STATE = frozenset(
    'open closed shut on off locked unlocked charging idle busy broken working offline online '
    'enabled disabled empty full running stopped paused active inactive available unavailable '
    'occupied free operational faulty blocked clear'.split())
# Opposite predicates: the same object under both is a contradiction.
NEGATIONS = {'is': 'is_not', 'are': 'are_not', 'can': 'cannot', 'can_not': 'can',
             'must': 'must_not', 'should': 'should_not', 'likes': 'dislikes',
             'like': 'dislike'}
NEGATIONS.update({negative: positive for positive, negative in list(NEGATIONS.items())})
NEGATIONS['cannot'] = 'can'


def fact_facet(predicate: str, value, single_valued=None) -> tuple:
    """
    ``(cardinality, facet)`` of a fact: ``('one', facet)``, ``('many', None)`` or unknown.

    Facts of one subject, predicate and conditions conflict only when both are ``one``
    with the same facet (the predicate itself, or ``location`` / ``state`` for a copula
    whose object is a place or a state). ``single_valued`` (the caller's hint) overrides
    the vocabulary.
    """
    predicate = normalise(predicate).replace(' ', '_')
    facet = None
    if predicate in COPULAS and isinstance(value, str):
        words = normalise(value)
        if words in _STATE:
            facet = 'state'
        elif _PLACE.match(words):
            facet = 'location'
        elif _AMOUNT.match(words):
            facet = 'value'
    elif predicate in COPULAS and isinstance(value, (int, float)) and not isinstance(value,
                                                                                     bool):
        facet = 'value'
    if single_valued is False:
        return 'many', None
    if single_valued is True:
        return 'one', facet or predicate
    if facet is not None or predicate in SINGLE_VALUED_PREDICATES:
        return 'one', facet or predicate
    if predicate in MULTI_VALUED_PREDICATES:
        return 'many', None
    return 'unknown', None


def classify(text: str) -> str:
    """Return the memory type of free text by rule: competence, working, episodic, else semantic."""
    if parse_procedure(text):
        return 'competence'
    if _WORKING.search(text):
        return 'working'
    if _TIMESTAMP.search(text):
        return 'episodic'
    return 'semantic'


_NEGATION = re.compile(r'\b(?:not|no|never|none|nothing|nobody|nowhere|neither|nor|cannot|'
                       r"without)\b|n['’]t\b", re.IGNORECASE)


def negated(text: str) -> bool:
    """Whether ``text`` says no anywhere ("not", "never", "can't", ...)."""
    return _NEGATION.search(text) is not None


def figures(text: str) -> frozenset:
    """
    Return the words of ``text`` that hold a digit: numbers, identifiers, measurements.

    Two texts that differ in them are two facts ("marker 11 near shelf A11", "marker 12 near
    shelf A12"), however similar the rest: never duplicates of each other.
    """
    return frozenset(word for word in token_set(text) if any(char.isdigit() for char in word))
