"""Closed word lists used by the invalid-target filter and the abbreviation linker.

All entries are canonical forms (lowercase, single spaces; see
:func:`harness_g.graph.text.canonical.canonicalize`). In the blocks below an underscore joins
the words of a multi-word entry (``costa_rican`` -> ``costa rican``).
"""
from __future__ import annotations

# Nationality / demonym adjectives (country-, region- and continent-level). Country *names*
# are deliberately absent: "France" is a fine lookup target, "French" is not.
_DEMONYM_ADJECTIVES = """
afghan albanian algerian american andorran angolan argentine argentinian armenian australian
austrian azerbaijani bahamian bahraini bangladeshi barbadian belarusian belgian belizean
beninese bhutanese bolivian bosnian botswanan brazilian british bruneian bulgarian burmese
burundian cambodian cameroonian canadian chadian chilean chinese colombian congolese
costa_rican croatian cuban cypriot czech danish dominican dutch ecuadorian egyptian emirati
english eritrean estonian ethiopian fijian filipino finnish french gabonese gambian georgian
german ghanaian greek grenadian guatemalan guinean guyanese haitian honduran hungarian
icelandic indian indonesian iranian iraqi irish israeli italian ivorian jamaican japanese
jordanian kazakh kenyan korean kuwaiti kyrgyz laotian latvian lebanese liberian libyan
lithuanian luxembourgish macedonian malagasy malawian malaysian maldivian malian maltese
mauritanian mauritian mexican moldovan monegasque mongolian montenegrin moroccan mozambican
namibian nepalese nepali nicaraguan nigerian nigerien norwegian omani pakistani palestinian
panamanian paraguayan persian peruvian polish portuguese qatari romanian russian rwandan
salvadoran samoan saudi scottish senegalese serbian sierra_leonean singaporean slovak
slovakian slovenian somali south_african south_korean north_korean spanish sri_lankan
sudanese surinamese swazi swedish swiss syrian taiwanese tajik tanzanian thai togolese
tongan trinidadian tunisian turkish turkmen ugandan ukrainian uruguayan uzbek venezuelan
vietnamese welsh yemeni zambian zimbabwean soviet yugoslav yugoslavian prussian
bavarian catalan basque flemish walloon corsican sicilian sardinian venetian tuscan
neapolitan cornish manx breton galician castilian quebecois texan californian
european asian african australasian oceanian scandinavian nordic baltic balkan slavic
latin_american north_american south_american central_american caribbean mediterranean
middle_eastern east_asian southeast_asian
"""
# Ethnic / ethnoreligious adjectives that NER tags NORP (or mislabels as ORG/GPE).
_ETHNIC_ADJECTIVES = """
arab arabian kurdish berber tamil punjabi sikh hindu muslim islamic christian jewish
catholic protestant buddhist hispanic latino latina chicano caucasian aboriginal maori inuit
native_american african_american asian_american pacific_islander anglo anglo_saxon celtic
gaelic germanic byzantine ottoman moorish mughal tibetan uyghur pashtun bengali gujarati
sinhalese romani zulu xhosa yoruba igbo hausa bedouin cherokee navajo sioux
"""
# Noun demonyms and plurals that do not follow the regular adjective + "s" pattern.
_DEMONYM_NOUNS = """
britons brits englishmen englishwomen frenchmen frenchwomen irishmen scotsmen welshmen
dutchmen scots danes swedes finns poles turks spaniards arabs jews kurds serbs croats czechs
slovaks greeks thais filipinos icelanders new_zealander new_zealanders latinos latinas
hispanics muslims christians catholics protestants hindus buddhists sikhs aborigines maoris
slavs celts saxons anglo_saxons normans moors ottomans soviets yugoslavs
"""


def _entries(block: str) -> list[str]:
    return [w.replace("_", " ") for w in block.split()]


def _build_nationalities() -> frozenset[str]:
    out: set[str] = set()
    for w in _entries(_DEMONYM_ADJECTIVES) + _entries(_ETHNIC_ADJECTIVES):
        out.add(w)
        # "-an"/"-i" demonyms double as nouns with a regular plural ("americans", "iraqis").
        if w.endswith(("an", "i")):
            out.add(w + "s")
    out.update(_entries(_DEMONYM_NOUNS))
    return frozenset(out)


NATIONALITIES: frozenset[str] = _build_nationalities()
"""Canonical nationality/ethnic adjectives and demonym plurals (``american``, ``americans``)."""

# Function words skipped when forming initials ("national aeronautics and space administration"
# -> "nasa"); the linker also tries the all-token variant ("department of defense" -> "dod").
INITIALS_STOPWORDS: frozenset[str] = frozenset("of and the for in on at to a an & de du la le".split())

# Tokens after which a surface is cut off mid-phrase ("harry potter and the", "university of").
DANGLING_TAIL_WORDS: frozenset[str] = frozenset(
    "of the and or for in on at to by with from & de del della di da du van von der".split()
)
