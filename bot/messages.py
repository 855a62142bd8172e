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
        "answer": "Here is a query that answers this ({rows}):",
        "answer_ask": "Here is a query that answers this; its answer is {yes_no}:",
        "best_effort": "I did not settle on a query myself. This is my best attempt, put together at the end of "
                       "the search ({rows}); please check it before relying on it:",
        "best_effort_ask": "I did not settle on a query myself. This is my best attempt, put together at the end "
                           "of the search (its answer is {yes_no}); please check it before relying on it:",
        "nothing": "I could not find a query that answers this.",
        "cannot_answer": "This cannot be answered from Wikidata, as far as I could find.",
        "searched": "I searched Wikidata for {searches} and ran {queries}.",
        "searched_no_search": "I ran {queries}.",
        "tried": "I searched Wikidata for {searches} and ran {queries}, but none returned results.",
        "tried_no_search": "I ran {queries}, but none returned results.",
        "queries_one": "1 query", "queries_other": "{count} queries",
        "rows_one": "1 result", "rows_other": "{count} results",
        "more_rows": "… {count} more rows",
        "yes": "yes", "no": "no",
        "try_it": "Try it!",
        "query_too_long": "The query is {count} characters long, too long to show in a reply.",
        "steps": "Steps taken ({steps}, {calls} model calls)",
        "same_query": "(the query above)",
        "left_out": "({count} earlier steps left out to keep the reply short)",
        "rolled_back": "(rolled back)",
        "agent": "Written by an automated agent that explores Wikidata with a language model",
        "run_by": "run by {operator}",
        "check": "please check the query before relying on it",
        "about": "about this bot",
        "user_page": "its user page",
        "earlier": "An earlier request looks similar: {link}",
        "earlier_by_using": "{user} answered it with a query using {properties}.",
        "earlier_by": "{user} answered it with a query.",
        "earlier_using": "It was answered with a query using {properties}.",
    },
    "de": {
        "answer": "Diese Abfrage beantwortet die Frage ({rows}):",
        "answer_ask": "Diese Abfrage beantwortet die Frage; ihre Antwort ist {yes_no}:",
        "best_effort": "Ich habe mich auf keine Abfrage festgelegt. Dies ist mein bester Versuch, am Ende der "
                       "Suche zusammengestellt ({rows}); bitte prüfe ihn, bevor du dich darauf verlässt:",
        "best_effort_ask": "Ich habe mich auf keine Abfrage festgelegt. Dies ist mein bester Versuch, am Ende "
                           "der Suche zusammengestellt (Antwort: {yes_no}); bitte prüfe ihn, bevor du dich darauf "
                           "verlässt:",
        "nothing": "Ich konnte keine Abfrage finden, die die Frage beantwortet.",
        "cannot_answer": "Diese Frage lässt sich mit Wikidata nicht beantworten, soweit ich finden konnte.",
        "searched": "Ich habe Wikidata nach {searches} durchsucht und {queries} ausgeführt.",
        "searched_no_search": "Ich habe {queries} ausgeführt.",
        "tried": "Ich habe Wikidata nach {searches} durchsucht und {queries} ausgeführt, aber keine lieferte "
                 "Ergebnisse.",
        "tried_no_search": "Ich habe {queries} ausgeführt, aber keine lieferte Ergebnisse.",
        "queries_one": "1 Abfrage", "queries_other": "{count} Abfragen",
        "rows_one": "1 Ergebnis", "rows_other": "{count} Ergebnisse",
        "more_rows": "… {count} weitere Zeilen",
        "yes": "ja", "no": "nein",
        "try_it": "Ausprobieren!",
        "query_too_long": "Die Abfrage ist {count} Zeichen lang, zu lang für eine Antwort.",
        "steps": "Vorgehen ({steps} Schritte, {calls} Modellaufrufe)",
        "same_query": "(die Abfrage oben)",
        "left_out": "({count} frühere Schritte ausgelassen, damit die Antwort kurz bleibt)",
        "rolled_back": "(verworfen)",
        "agent": "Geschrieben von einem automatischen Agenten, der Wikidata mit einem Sprachmodell erkundet",
        "run_by": "betrieben von {operator}",
        "check": "bitte prüfe die Abfrage, bevor du dich darauf verlässt",
        "about": "über diesen Bot",
        "user_page": "seine Benutzerseite",
        "earlier": "Eine frühere Anfrage sieht ähnlich aus: {link}",
        "earlier_by_using": "{user} beantwortete sie mit einer Abfrage über {properties}.",
        "earlier_by": "{user} beantwortete sie mit einer Abfrage.",
        "earlier_using": "Sie wurde mit einer Abfrage über {properties} beantwortet.",
    },
    "fr": {
        "answer": "Voici une requête qui répond à la question ({rows}) :",
        "answer_ask": "Voici une requête qui répond à la question ; sa réponse est {yes_no} :",
        "best_effort": "Je ne me suis arrêté sur aucune requête. Voici ma meilleure tentative, assemblée à la fin "
                       "de la recherche ({rows}) ; merci de la vérifier avant de vous y fier :",
        "best_effort_ask": "Je ne me suis arrêté sur aucune requête. Voici ma meilleure tentative, assemblée à la "
                           "fin de la recherche (réponse : {yes_no}) ; merci de la vérifier avant de vous y fier :",
        "nothing": "Je n'ai pas trouvé de requête qui réponde à la question.",
        "cannot_answer": "Wikidata ne permet pas de répondre à cette question, d'après ce que j'ai trouvé.",
        "searched": "J'ai cherché {searches} dans Wikidata et exécuté {queries}.",
        "searched_no_search": "J'ai exécuté {queries}.",
        "tried": "J'ai cherché {searches} dans Wikidata et exécuté {queries}, sans aucun résultat.",
        "tried_no_search": "J'ai exécuté {queries}, sans aucun résultat.",
        "queries_one": "1 requête", "queries_other": "{count} requêtes",
        "rows_one": "1 résultat", "rows_other": "{count} résultats",
        "more_rows": "… {count} lignes de plus",
        "yes": "oui", "no": "non",
        "try_it": "Essayer !",
        "query_too_long": "La requête fait {count} caractères, trop pour une réponse.",
        "steps": "Étapes ({steps}, {calls} appels au modèle)",
        "same_query": "(la requête ci-dessus)",
        "left_out": "({count} étapes antérieures omises pour garder la réponse courte)",
        "rolled_back": "(annulée)",
        "agent": "Écrit par un agent automatique qui explore Wikidata avec un modèle de langue",
        "run_by": "géré par {operator}",
        "check": "merci de vérifier la requête avant de vous y fier",
        "about": "à propos de ce bot",
        "user_page": "sa page utilisateur",
        "earlier": "Une demande antérieure semble similaire : {link}",
        "earlier_by_using": "{user} y a répondu par une requête utilisant {properties}.",
        "earlier_by": "{user} y a répondu par une requête.",
        "earlier_using": "Elle a reçu pour réponse une requête utilisant {properties}.",
    },
    "es": {
        "answer": "Esta consulta responde a la pregunta ({rows}):",
        "answer_ask": "Esta consulta responde a la pregunta; su respuesta es {yes_no}:",
        "best_effort": "No me decidí por ninguna consulta. Este es mi mejor intento, reunido al final de la "
                       "búsqueda ({rows}); compruébalo antes de fiarte de él:",
        "best_effort_ask": "No me decidí por ninguna consulta. Este es mi mejor intento, reunido al final de la "
                           "búsqueda (respuesta: {yes_no}); compruébalo antes de fiarte de él:",
        "nothing": "No encontré ninguna consulta que responda a la pregunta.",
        "cannot_answer": "Esta pregunta no se puede responder con Wikidata, por lo que pude encontrar.",
        "searched": "Busqué {searches} en Wikidata y ejecuté {queries}.",
        "searched_no_search": "Ejecuté {queries}.",
        "tried": "Busqué {searches} en Wikidata y ejecuté {queries}, pero ninguna devolvió resultados.",
        "tried_no_search": "Ejecuté {queries}, pero ninguna devolvió resultados.",
        "queries_one": "1 consulta", "queries_other": "{count} consultas",
        "rows_one": "1 resultado", "rows_other": "{count} resultados",
        "more_rows": "… {count} filas más",
        "yes": "sí", "no": "no",
        "try_it": "¡Pruébala!",
        "query_too_long": "La consulta tiene {count} caracteres, demasiados para una respuesta.",
        "steps": "Pasos ({steps}, {calls} llamadas al modelo)",
        "same_query": "(la consulta de arriba)",
        "left_out": "({count} pasos anteriores omitidos para que la respuesta sea breve)",
        "rolled_back": "(descartado)",
        "agent": "Escrito por un agente automático que explora Wikidata con un modelo de lenguaje",
        "run_by": "gestionado por {operator}",
        "check": "comprueba la consulta antes de fiarte de ella",
        "about": "sobre este bot",
        "user_page": "su página de usuario",
        "earlier": "Una solicitud anterior parece similar: {link}",
        "earlier_by_using": "{user} la respondió con una consulta que usa {properties}.",
        "earlier_by": "{user} la respondió con una consulta.",
        "earlier_using": "Se respondió con una consulta que usa {properties}.",
    },
}


def messages_for(language: str) -> dict[str, str]:
    """The table for a BCP 47 code (``de``, ``de-CH`` and ``DE`` all give German), English otherwise."""
    primary = str(language or "").split("-")[0].split("_")[0].strip().lower()
    return MESSAGES.get(primary, MESSAGES["en"])
