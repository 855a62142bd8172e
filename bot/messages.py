"""The fixed wording of a reply, in the languages the forum's askers write most.

A reply is written in the asker's language (the model's judgement, a BCP 47
code on the result) when this table has it, in English otherwise.  The
messages are plain text: the renderer encodes them like any other text and
fills the ``{name}`` fields with text it has encoded already.  Every reply
says that an automated agent wrote it, names its operator and links the
bot's documentation page (``agent``, ``run_by``, ``about``); only a reply
with a query asks to check it (``check``).
"""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
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
        "first_rows": "the first {count} in the table",
        "more_rows_one": "… 1 more row", "more_rows_other": "… {count} more rows",
        "rows_in_all_one": "(1 row in all)", "rows_in_all_other": "({count} rows in all)",
        "more_lines_one": "… 1 more line", "more_lines_other": "… {count} more lines",
        "properties_one": "(1 property)", "properties_other": "({count} properties)",
        "no_rows": "no rows", "nothing_found": "nothing found",
        "query_syntax_error": "syntax error: {message}", "query_error": "error: {message}",
        "query_timeout": "timed out",
        "decimal_mark": ".", "group_mark": ",",
        "yes": "yes", "no": "no",
        "try_it": "Try it!",
        "query_too_long": "The query is {count} characters long, too long to show in a reply.",
        "steps": "Steps taken ({steps}, {calls} model calls)",
        "same_query": "(the final query, shown above)",
        "left_out": "({count} earlier steps left out to keep the reply short)",
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
        "first_rows": "die ersten {count} in der Tabelle",
        "more_rows_one": "… 1 weitere Zeile", "more_rows_other": "… {count} weitere Zeilen",
        "rows_in_all_one": "(1 Zeile insgesamt)", "rows_in_all_other": "({count} Zeilen insgesamt)",
        "more_lines_one": "… 1 weitere Zeile", "more_lines_other": "… {count} weitere Zeilen",
        "properties_one": "(1 Eigenschaft)", "properties_other": "({count} Eigenschaften)",
        "no_rows": "keine Zeilen", "nothing_found": "nichts gefunden",
        "query_syntax_error": "Syntaxfehler: {message}", "query_error": "Fehler: {message}",
        "query_timeout": "Zeitüberschreitung",
        "decimal_mark": ",", "group_mark": ".",
        "yes": "ja", "no": "nein",
        "try_it": "Ausprobieren!",
        "query_too_long": "Die Abfrage ist {count} Zeichen lang, zu lang für eine Antwort.",
        "steps": "Vorgehen ({steps} Schritte, {calls} Modellaufrufe)",
        "same_query": "(die endgültige Abfrage, oben gezeigt)",
        "left_out": "({count} frühere Schritte ausgelassen, damit die Antwort kurz bleibt)",
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
        "queries_one": "1 requête", "queries_other": "{count} requêtes",
        "rows_one": "1 résultat", "rows_other": "{count} résultats",
        "first_rows": "les {count} premiers dans le tableau",
        "more_rows_one": "… 1 ligne de plus", "more_rows_other": "… {count} lignes de plus",
        "rows_in_all_one": "(1 ligne en tout)", "rows_in_all_other": "({count} lignes en tout)",
        "more_lines_one": "… 1 ligne de plus", "more_lines_other": "… {count} lignes de plus",
        "properties_one": "(1 propriété)", "properties_other": "({count} propriétés)",
        "no_rows": "aucune ligne", "nothing_found": "rien trouvé",
        "query_syntax_error": "erreur de syntaxe : {message}", "query_error": "erreur : {message}",
        "query_timeout": "délai dépassé",
        "decimal_mark": ",", "group_mark": "\u202f",
        "yes": "oui", "no": "non",
        "try_it": "Essayer !",
        "query_too_long": "La requête fait {count} caractères, trop pour une réponse.",
        "steps": "Étapes ({steps}, {calls} appels au modèle)",
        "same_query": "(la requête finale, montrée ci-dessus)",
        "left_out": "({count} étapes antérieures omises pour garder la réponse courte)",
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
        "queries_one": "1 consulta", "queries_other": "{count} consultas",
        "rows_one": "1 resultado", "rows_other": "{count} resultados",
        "first_rows": "los {count} primeros en la tabla",
        "more_rows_one": "… 1 fila más", "more_rows_other": "… {count} filas más",
        "rows_in_all_one": "(1 fila en total)", "rows_in_all_other": "({count} filas en total)",
        "more_lines_one": "… 1 línea más", "more_lines_other": "… {count} líneas más",
        "properties_one": "(1 propiedad)", "properties_other": "({count} propiedades)",
        "no_rows": "ninguna fila", "nothing_found": "nada encontrado",
        "query_syntax_error": "error de sintaxis: {message}", "query_error": "error: {message}",
        "query_timeout": "tiempo agotado",
        "decimal_mark": ",", "group_mark": ".",
        "yes": "sí", "no": "no",
        "try_it": "¡Pruébala!",
        "query_too_long": "La consulta tiene {count} caracteres, demasiados para una respuesta.",
        "steps": "Pasos ({steps}, {calls} llamadas al modelo)",
        "same_query": "(la consulta final, mostrada arriba)",
        "left_out": "({count} pasos anteriores omitidos para que la respuesta sea breve)",
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
    },
}


def reply_language(language: str) -> str:
    """The language a reply is written in for a BCP 47 code: ``de``, ``de-CH`` and ``DE`` all give ``de``; a
    language this table lacks gives ``en``."""
    primary = str(language or "").split("-")[0].split("_")[0].strip().lower()
    return primary if primary in MESSAGES else "en"


def messages_for(language: str) -> dict[str, str]:
    """The table for a BCP 47 code (by :func:`reply_language`)."""
    return MESSAGES[reply_language(language)]
