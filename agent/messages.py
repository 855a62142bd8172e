"""The fixed wording of a reply (and of the chat page's line on where a query runs), in the languages the forum's
askers write most.

A reply is written in the asker's language (the model's judgement, a BCP 47
code on the result) when this table has it, in English otherwise.  The
messages are plain text: the renderer encodes them like any other text and
fills the ``{name}`` fields with text it has encoded already.  Every reply
says that an automated agent wrote it, names its operator and links the
bot's documentation page (``agent``, ``run_by``, ``about``); only a reply
with a query asks to check it (``check``).  ``semicolon`` and ``colon`` are the
punctuation the reply puts between such pieces, as the language spaces it
(French " ; "): they hold no markup and are put in as they are.

A phrase with a number in it has one message per plural form of its
language (``rows_one``, ``rows_other``; French and Spanish ``rows_many`` for
a whole number of millions, "1 000 000 de lignes"), chosen by
:func:`counted` with the language's rule (:data:`PLURAL_RULES`, as the Unicode
CLDR states it for whole numbers), the number written as the language writes
it (:func:`written_number`).
"""

from __future__ import annotations

import re
from collections.abc import Callable


class Words(dict[str, str]):
    """One language's messages, by key; :attr:`language` says which, and so which plural rule they follow."""

    def __init__(self, language: str, messages: dict[str, str]) -> None:
        super().__init__(messages)
        self.language = language


def _millions(count: int) -> bool:
    return count != 0 and count % 1_000_000 == 0


#: The plural form of a whole number, by language: CLDR's rules for integers (English and German: 1 is ``one``;
#: French: 0 and 1 are; French and Spanish put "de" after a whole number of millions, the ``many`` form).
PLURAL_RULES: dict[str, Callable[[int], str]] = {
    "en": lambda count: "one" if count == 1 else "other",
    "de": lambda count: "one" if count == 1 else "other",
    "fr": lambda count: "one" if count in (0, 1) else "many" if _millions(count) else "other",
    "es": lambda count: "one" if count == 1 else "many" if _millions(count) else "other",
}
#: The plural forms each language's counted messages have.
PLURAL_FORMS = {"en": ("one", "other"), "de": ("one", "other"), "fr": ("one", "many", "other"),
                "es": ("one", "many", "other")}

_TABLES: dict[str, dict[str, str]] = {
    "en": {
        "answer": "The query below finds {rows}.",
        "answer_ask": "The query below answers this: {yes_no}.",
        "best_effort": "I did not settle on a query myself; the query below is my best attempt, put together at the "
                       "end of the search ({rows}). Please check it before relying on it.",
        "best_effort_ask": "I did not settle on a query myself; the query below is my best attempt, put together at "
                           "the end of the search (its answer is {yes_no}). Please check it before relying on it.",
        "nothing": "I could not find a query that answers this.",
        "cannot_answer": "This cannot be answered from Wikidata, as far as I could find.",
        "searched": "I searched Wikidata for {searches} and ran {queries}.",
        "searched_no_search": "I ran {queries}.",
        "searched_only": "I searched Wikidata for {searches}.",
        "tried": "I searched Wikidata for {searches} and ran {queries}, but none returned results.",
        "tried_no_search": "I ran {queries}, but none returned results.",
        "queries_one": "1 query", "queries_other": "{count} queries",
        "rows_one": "1 result", "rows_other": "{count} results",
        "first_rows_one": "the first in the table", "first_rows_other": "the first {count} in the table",
        "more_rows_one": "… 1 more row", "more_rows_other": "… {count} more rows",
        "rows_in_all_one": "(1 row in all)", "rows_in_all_other": "({count} rows in all)",
        "more_lines_one": "… 1 more line", "more_lines_other": "… {count} more lines",
        "properties_one": "(1 property)", "properties_other": "({count} properties)",
        "no_rows": "no rows", "nothing_found": "nothing found", "no_such_entity": "no such entity",
        "query_syntax_error": "syntax error: {message}", "query_error": "error: {message}",
        "query_timeout": "timed out",
        "decimal_mark": ".", "group_mark": ",", "semicolon": "; ", "colon": ": ",
        "yes": "yes", "no": "no",
        "try_it": "Try it!",
        "query_too_long_one": "The query is 1 character long, too long to show in a reply.",
        "query_too_long_other": "The query is {count} characters long, too long to show in a reply.",
        "steps_title": "What I did ({steps}, {calls})",
        "steps_one": "1 step", "steps_other": "{count} steps",
        "calls_one": "1 model call", "calls_other": "{count} model calls",
        "same_query": "(the final query, shown above)",
        "left_out_one": "(1 earlier step left out to keep the reply short)",
        "left_out_other": "({count} earlier steps left out to keep the reply short)",
        "rolled_back": "(rolled back)",
        "agent": "Written by an automated agent with a language model",
        "run_by": "run by {operator}",
        "check": "please check the query",
        "about": "about this bot",
        "user_page": "its user page",
        "earlier": "An earlier request looks similar: {link}",
        "earlier_by_using": "{user} answered it with a query using {properties}.",
        "earlier_by": "{user} answered it with a query.",
        "earlier_using": "It was answered with a query using {properties}.",
        "engine_first": "{rows} on {engine}", "engine_same": "{count} on {engine}",
        "engine_fewer": "{engine} found {count}, {difference} fewer",
        "engine_more": "{engine} found {count}, {difference} more",
        "engine_other_rows": "{engine} found {count}, {difference} of them not on {other}",
        "engine_unsupported": "{engine} does not support this query", "engine_timeout": "{engine} timed out",
        "engine_busy": "{engine} was busy", "engine_failed": "{engine} refused the query",
        "try_on": "Try it on {engine}", "data_as_of": "data as of {date}", "engine_data_as_of": "{engine}: {data}",
        "stale": "{engine}'s data is from {date}, older than {days}",
        "stale_no_limit": "{engine}'s data is from {date}, older than this bot accepts",
        "stale_undated": "{engine} does not say how fresh its data is",
        "engine_posted_for": "{main} cannot run it, so the query above is the one for {engine}",
        "days_one": "1 day", "days_other": "{count} days",
        "date": "{day} {month} {year}", "first_day": "1",
        "month_1": "January", "month_2": "February", "month_3": "March", "month_4": "April", "month_5": "May",
        "month_6": "June", "month_7": "July", "month_8": "August", "month_9": "September", "month_10": "October",
        "month_11": "November", "month_12": "December",
    },
    "de": {
        "answer": "Die Abfrage unten liefert {rows}.",
        "answer_ask": "Die Abfrage unten beantwortet die Frage: {yes_no}.",
        "best_effort": "Ich habe mich auf keine Abfrage festgelegt; die Abfrage unten ist mein bester Versuch, am Ende "
                       "der Suche zusammengestellt ({rows}). Bitte prüfe sie, bevor du dich darauf verlässt.",
        "best_effort_ask": "Ich habe mich auf keine Abfrage festgelegt; die Abfrage unten ist mein bester Versuch, am "
                           "Ende der Suche zusammengestellt (Antwort: {yes_no}). Bitte prüfe sie, bevor du dich "
                           "darauf verlässt.",
        "nothing": "Ich konnte keine Abfrage finden, die die Frage beantwortet.",
        "cannot_answer": "Diese Frage lässt sich mit Wikidata nicht beantworten, soweit ich finden konnte.",
        "searched": "Ich habe Wikidata nach {searches} durchsucht und {queries} ausgeführt.",
        "searched_no_search": "Ich habe {queries} ausgeführt.",
        "searched_only": "Ich habe Wikidata nach {searches} durchsucht.",
        "tried": "Ich habe Wikidata nach {searches} durchsucht und {queries} ausgeführt, aber keine lieferte "
                 "Ergebnisse.",
        "tried_no_search": "Ich habe {queries} ausgeführt, aber keine lieferte Ergebnisse.",
        "queries_one": "1 Abfrage", "queries_other": "{count} Abfragen",
        "rows_one": "1 Ergebnis", "rows_other": "{count} Ergebnisse",
        "first_rows_one": "das erste in der Tabelle", "first_rows_other": "die ersten {count} in der Tabelle",
        "more_rows_one": "… 1 weitere Zeile", "more_rows_other": "… {count} weitere Zeilen",
        "rows_in_all_one": "(1 Zeile insgesamt)", "rows_in_all_other": "({count} Zeilen insgesamt)",
        "more_lines_one": "… 1 weitere Zeile", "more_lines_other": "… {count} weitere Zeilen",
        "properties_one": "(1 Eigenschaft)", "properties_other": "({count} Eigenschaften)",
        "no_rows": "keine Zeilen", "nothing_found": "nichts gefunden", "no_such_entity": "keine solche Entität",
        "query_syntax_error": "Syntaxfehler: {message}", "query_error": "Fehler: {message}",
        "query_timeout": "Zeitüberschreitung",
        "decimal_mark": ",", "group_mark": ".", "semicolon": "; ", "colon": ": ",
        "yes": "ja", "no": "nein",
        "try_it": "Ausprobieren!",
        "query_too_long_one": "Die Abfrage ist 1 Zeichen lang, zu lang für eine Antwort.",
        "query_too_long_other": "Die Abfrage ist {count} Zeichen lang, zu lang für eine Antwort.",
        "steps_title": "Vorgehen ({steps}, {calls})",
        "steps_one": "1 Schritt", "steps_other": "{count} Schritte",
        "calls_one": "1 Modellaufruf", "calls_other": "{count} Modellaufrufe",
        "same_query": "(die endgültige Abfrage, oben gezeigt)",
        "left_out_one": "(1 früherer Schritt ausgelassen, damit die Antwort kurz bleibt)",
        "left_out_other": "({count} frühere Schritte ausgelassen, damit die Antwort kurz bleibt)",
        "rolled_back": "(verworfen)",
        "agent": "Geschrieben von einem automatischen Agenten mit einem Sprachmodell",
        "run_by": "betrieben von {operator}",
        "check": "bitte prüfe die Abfrage",
        "about": "über diesen Bot",
        "user_page": "seine Benutzerseite",
        "earlier": "Eine frühere Anfrage sieht ähnlich aus: {link}",
        "earlier_by_using": "{user} beantwortete sie mit einer Abfrage über {properties}.",
        "earlier_by": "{user} beantwortete sie mit einer Abfrage.",
        "earlier_using": "Sie wurde mit einer Abfrage über {properties} beantwortet.",
        "engine_first": "{engine}: {rows}", "engine_same": "{engine}: {count}",
        "engine_fewer": "{engine}: {count}, {difference} weniger",
        "engine_more": "{engine}: {count}, {difference} mehr",
        "engine_other_rows": "{engine}: {count}, davon {difference} nicht bei {other}",
        "engine_unsupported": "{engine} unterstützt diese Abfrage nicht",
        "engine_timeout": "{engine}: Zeitüberschreitung",
        "engine_busy": "{engine} war ausgelastet", "engine_failed": "{engine} lehnte die Abfrage ab",
        "try_on": "Ausprobieren: {engine}", "data_as_of": "Datenstand {date}", "engine_data_as_of": "{engine}: {data}",
        "stale": "Die Daten von {engine} stammen vom {date}, älter als {days}",
        "stale_no_limit": "Die Daten von {engine} stammen vom {date}, älter als dieser Bot zulässt",
        "stale_undated": "{engine} nennt keinen Datenstand",
        "engine_posted_for": "{main} kann sie nicht ausführen; die Abfrage oben ist die für {engine}",
        "days_one": "1 Tag", "days_other": "{count} Tage",
        "date": "{day}. {month} {year}", "first_day": "1",
        "month_1": "Januar", "month_2": "Februar", "month_3": "März", "month_4": "April", "month_5": "Mai",
        "month_6": "Juni", "month_7": "Juli", "month_8": "August", "month_9": "September", "month_10": "Oktober",
        "month_11": "November", "month_12": "Dezember",
    },
    "fr": {
        "answer": "La requête ci-dessous donne {rows}.",
        "answer_ask": "La requête ci-dessous répond à la question : {yes_no}.",
        "best_effort": "Je ne me suis arrêté sur aucune requête ; celle ci-dessous est ma meilleure tentative, "
                       "assemblée à la fin de la recherche ({rows}). Merci de la vérifier avant de vous y fier.",
        "best_effort_ask": "Je ne me suis arrêté sur aucune requête ; celle ci-dessous est ma meilleure tentative, "
                           "assemblée à la fin de la recherche (réponse : {yes_no}). Merci de la vérifier avant de "
                           "vous y fier.",
        "nothing": "Je n'ai pas trouvé de requête qui réponde à la question.",
        "cannot_answer": "Wikidata ne permet pas de répondre à cette question, d'après ce que j'ai trouvé.",
        "searched": "J'ai cherché {searches} dans Wikidata et exécuté {queries}.",
        "searched_no_search": "J'ai exécuté {queries}.",
        "searched_only": "J'ai cherché {searches} dans Wikidata.",
        "tried": "J'ai cherché {searches} dans Wikidata et exécuté {queries}, sans aucun résultat.",
        "tried_no_search": "J'ai exécuté {queries}, sans aucun résultat.",
        "queries_one": "{count} requête", "queries_many": "{count} de requêtes", "queries_other": "{count} requêtes",
        "rows_one": "{count} résultat", "rows_many": "{count} de résultats", "rows_other": "{count} résultats",
        "first_rows_one": "le premier dans le tableau", "first_rows_many": "les {count} premiers dans le tableau",
        "first_rows_other": "les {count} premiers dans le tableau",
        "more_rows_one": "… {count} ligne de plus", "more_rows_many": "… {count} de lignes de plus",
        "more_rows_other": "… {count} lignes de plus",
        "rows_in_all_one": "({count} ligne en tout)", "rows_in_all_many": "({count} de lignes en tout)",
        "rows_in_all_other": "({count} lignes en tout)",
        "more_lines_one": "… {count} ligne de plus", "more_lines_many": "… {count} de lignes de plus",
        "more_lines_other": "… {count} lignes de plus",
        "properties_one": "({count} propriété)", "properties_many": "({count} de propriétés)",
        "properties_other": "({count} propriétés)",
        "no_rows": "aucune ligne", "nothing_found": "rien trouvé", "no_such_entity": "entité inexistante",
        "query_syntax_error": "erreur de syntaxe : {message}", "query_error": "erreur : {message}",
        "query_timeout": "délai dépassé",
        "decimal_mark": ",", "group_mark": "\u202f", "semicolon": " ; ", "colon": " : ",
        "yes": "oui", "no": "non",
        "try_it": "Essayer !",
        "query_too_long_one": "La requête fait {count} caractère, trop pour une réponse.",
        "query_too_long_many": "La requête fait {count} de caractères, trop pour une réponse.",
        "query_too_long_other": "La requête fait {count} caractères, trop pour une réponse.",
        "steps_title": "Ma démarche ({steps}, {calls})",
        "steps_one": "{count} étape", "steps_many": "{count} d'étapes", "steps_other": "{count} étapes",
        "calls_one": "{count} appel au modèle", "calls_many": "{count} d'appels au modèle",
        "calls_other": "{count} appels au modèle",
        "same_query": "(la requête finale, montrée ci-dessus)",
        "left_out_one": "({count} étape antérieure omise pour garder la réponse courte)",
        "left_out_many": "({count} d'étapes antérieures omises pour garder la réponse courte)",
        "left_out_other": "({count} étapes antérieures omises pour garder la réponse courte)",
        "rolled_back": "(annulée)",
        "agent": "Écrit par un agent automatique avec un modèle de langue",
        "run_by": "géré par {operator}",
        "check": "merci de vérifier la requête",
        "about": "à propos de ce bot",
        "user_page": "sa page utilisateur",
        "earlier": "Une demande antérieure semble similaire : {link}",
        "earlier_by_using": "{user} y a répondu par une requête utilisant {properties}.",
        "earlier_by": "{user} y a répondu par une requête.",
        "earlier_using": "Elle a reçu pour réponse une requête utilisant {properties}.",
        "engine_first": "{engine} : {rows}", "engine_same": "{engine} : {count}",
        "engine_fewer": "{engine} : {count}, soit {difference} de moins",
        "engine_more": "{engine} : {count}, soit {difference} de plus",
        "engine_other_rows": "{engine} : {count}, dont {difference} absents de {other}",
        "engine_unsupported": "{engine} ne prend pas en charge cette requête",
        "engine_timeout": "{engine} : délai dépassé",
        "engine_busy": "{engine} était occupé", "engine_failed": "{engine} a refusé la requête",
        "try_on": "Essayer sur {engine}", "data_as_of": "données du {date}", "engine_data_as_of": "{engine} : {data}",
        "stale": "Les données de {engine} datent du {date}, soit plus de {days}",
        "stale_no_limit": "Les données de {engine} datent du {date}, trop anciennes pour ce bot",
        "stale_undated": "{engine} n'indique pas la date de ses données",
        "engine_posted_for": "{main} ne peut pas l'exécuter ; la requête ci-dessus est celle pour {engine}",
        "days_one": "{count} jour", "days_many": "{count} de jours", "days_other": "{count} jours",
        "date": "{day} {month} {year}", "first_day": "1er",
        "month_1": "janvier", "month_2": "février", "month_3": "mars", "month_4": "avril", "month_5": "mai",
        "month_6": "juin", "month_7": "juillet", "month_8": "août", "month_9": "septembre", "month_10": "octobre",
        "month_11": "novembre", "month_12": "décembre",
    },
    "es": {
        "answer": "La consulta de abajo da {rows}.",
        "answer_ask": "La consulta de abajo responde a la pregunta: {yes_no}.",
        "best_effort": "No me decidí por ninguna consulta; la de abajo es mi mejor intento, reunido al final de la "
                       "búsqueda ({rows}). Compruébala antes de fiarte de ella.",
        "best_effort_ask": "No me decidí por ninguna consulta; la de abajo es mi mejor intento, reunido al final de "
                           "la búsqueda (respuesta: {yes_no}). Compruébala antes de fiarte de ella.",
        "nothing": "No encontré ninguna consulta que responda a la pregunta.",
        "cannot_answer": "Esta pregunta no se puede responder con Wikidata, por lo que pude encontrar.",
        "searched": "Busqué {searches} en Wikidata y ejecuté {queries}.",
        "searched_no_search": "Ejecuté {queries}.",
        "searched_only": "Busqué {searches} en Wikidata.",
        "tried": "Busqué {searches} en Wikidata y ejecuté {queries}, pero ninguna devolvió resultados.",
        "tried_no_search": "Ejecuté {queries}, pero ninguna devolvió resultados.",
        "queries_one": "1 consulta", "queries_many": "{count} de consultas", "queries_other": "{count} consultas",
        "rows_one": "1 resultado", "rows_many": "{count} de resultados", "rows_other": "{count} resultados",
        "first_rows_one": "el primero en la tabla", "first_rows_many": "los {count} primeros en la tabla",
        "first_rows_other": "los {count} primeros en la tabla",
        "more_rows_one": "… 1 fila más", "more_rows_many": "… {count} de filas más",
        "more_rows_other": "… {count} filas más",
        "rows_in_all_one": "(1 fila en total)", "rows_in_all_many": "({count} de filas en total)",
        "rows_in_all_other": "({count} filas en total)",
        "more_lines_one": "… 1 línea más", "more_lines_many": "… {count} de líneas más",
        "more_lines_other": "… {count} líneas más",
        "properties_one": "(1 propiedad)", "properties_many": "({count} de propiedades)",
        "properties_other": "({count} propiedades)",
        "no_rows": "ninguna fila", "nothing_found": "nada encontrado", "no_such_entity": "entidad inexistente",
        "query_syntax_error": "error de sintaxis: {message}", "query_error": "error: {message}",
        "query_timeout": "tiempo agotado",
        "decimal_mark": ",", "group_mark": ".", "semicolon": "; ", "colon": ": ",
        "yes": "sí", "no": "no",
        "try_it": "¡Pruébala!",
        "query_too_long_one": "La consulta tiene 1 carácter, demasiado larga para una respuesta.",
        "query_too_long_many": "La consulta tiene {count} de caracteres, demasiados para una respuesta.",
        "query_too_long_other": "La consulta tiene {count} caracteres, demasiados para una respuesta.",
        "steps_title": "Cómo busqué ({steps}, {calls})",
        "steps_one": "1 paso", "steps_many": "{count} de pasos", "steps_other": "{count} pasos",
        "calls_one": "1 llamada al modelo", "calls_many": "{count} de llamadas al modelo",
        "calls_other": "{count} llamadas al modelo",
        "same_query": "(la consulta final, mostrada arriba)",
        "left_out_one": "(1 paso anterior omitido para que la respuesta sea breve)",
        "left_out_many": "({count} de pasos anteriores omitidos para que la respuesta sea breve)",
        "left_out_other": "({count} pasos anteriores omitidos para que la respuesta sea breve)",
        "rolled_back": "(descartado)",
        "agent": "Escrito por un agente automático con un modelo de lenguaje",
        "run_by": "gestionado por {operator}",
        "check": "comprueba la consulta",
        "about": "sobre este bot",
        "user_page": "su página de usuario",
        "earlier": "Una solicitud anterior parece similar: {link}",
        "earlier_by_using": "{user} la respondió con una consulta que usa {properties}.",
        "earlier_by": "{user} la respondió con una consulta.",
        "earlier_using": "Se respondió con una consulta que usa {properties}.",
        "engine_first": "{engine}: {rows}", "engine_same": "{engine}: {count}",
        "engine_fewer": "{engine}: {count}, {difference} menos",
        "engine_more": "{engine}: {count}, {difference} más",
        "engine_other_rows": "{engine}: {count}, {difference} de ellos no en {other}",
        "engine_unsupported": "{engine} no admite esta consulta",
        "engine_timeout": "{engine}: tiempo agotado",
        "engine_busy": "{engine} estaba ocupado", "engine_failed": "{engine} rechazó la consulta",
        "try_on": "Pruébala en {engine}", "data_as_of": "datos del {date}", "engine_data_as_of": "{engine}: {data}",
        "stale": "Los datos de {engine} son del {date}, más de {days} de antigüedad",
        "stale_no_limit": "Los datos de {engine} son del {date}, más antiguos de lo que este bot acepta",
        "stale_undated": "{engine} no indica la fecha de sus datos",
        "engine_posted_for": "{main} no puede ejecutarla; la consulta de arriba es la de {engine}",
        "days_one": "1 día", "days_many": "{count} de días", "days_other": "{count} días",
        "date": "{day} de {month} de {year}", "first_day": "1",
        "month_1": "enero", "month_2": "febrero", "month_3": "marzo", "month_4": "abril", "month_5": "mayo",
        "month_6": "junio", "month_7": "julio", "month_8": "agosto", "month_9": "septiembre", "month_10": "octubre",
        "month_11": "noviembre", "month_12": "diciembre",
    },
}


#: The messages of each language a reply can be written in.
MESSAGES: dict[str, Words] = {language: Words(language, table) for language, table in _TABLES.items()}
_DECIMAL = re.compile(r"([+-]?)(\d+)(?:\.(\d+))?")


def reply_language(language: str) -> str:
    """The language a reply is written in for a BCP 47 code: ``de``, ``de-CH`` and ``DE`` all give ``de``; a
    language this table lacks gives ``en``."""
    primary = str(language or "").split("-")[0].split("_")[0].strip().lower()
    return primary if primary in MESSAGES else "en"


def messages_for(language: str) -> Words:
    """The table for a BCP 47 code (by :func:`reply_language`)."""
    return MESSAGES[reply_language(language)]


def written_number(value: str, words: dict[str, str]) -> str:
    """A decimal number as the language of *words* writes it: its decimal mark, and its thousands grouped from
    five digits on (so that a year or a four-digit count reads as written); *value* unchanged when it is no plain
    decimal (an exponent, a word)."""
    match = _DECIMAL.fullmatch(value.strip())
    if not match:
        return value
    sign, whole, fraction = match.groups()
    whole = whole.lstrip("0") or "0"
    if len(whole) > 4:
        head = len(whole) % 3 or 3
        whole = words["group_mark"].join([whole[:head]] + [whole[i:i + 3] for i in range(head, len(whole), 3)])
    return ("-" if sign == "-" else "") + whole + (words["decimal_mark"] + fraction if fraction else "")


def counted(words: Words, key: str, count: int) -> str:
    """The message *key* for *count* things in the language of *words*: its plural form by that language's rule
    (``rows_one``, ``rows_many``, ``rows_other``), *count* written as the language writes numbers."""
    return words[f"{key}_{PLURAL_RULES[words.language](count)}"].format(count=written_number(str(count), words))
