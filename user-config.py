# pywikibot's configuration for the bot: who edits which wiki, and how politely.
# The bot's own settings (page, interval, model, limits) are in bot.ini, section [bot]: see bot/config.py.
# Values come from the environment so that no name or secret has to be written into this file.
import os

# Another wiki: SPINACH_BOT_API_URL is its api.php (e.g. https://test.wikidata.org/w/api.php); pywikibot then
# builds the family in memory from the URL and writes no family file.  Without it: Wikidata itself.
_api_url = os.environ.get("SPINACH_BOT_API_URL", "")
family = os.environ.get("SPINACH_BOT_FAMILY", "spinachwiki" if _api_url else "wikidata")
mylang = os.environ.get("SPINACH_BOT_LANG", family if _api_url else "wikidata")
if _api_url:
    family_files[family] = _api_url  # noqa: F821 (pywikibot defines it)
# The bot account; log in with a BotPassword (Special:BotPasswords, grants: basic, highvolume, editpage).
usernames[family][mylang] = os.environ.get("SPINACH_BOT_USER", "")  # noqa: F821 (pywikibot defines it)
# A file holding the line ('BotName', BotPassword('suffix', 'secret')), readable by the bot's user only.
password_file = os.environ.get("SPINACH_BOT_PASSWORD_FILE", "user-password.py")
# At most one edit every 10 seconds, and pause while the servers lag more than 5 seconds.
put_throttle = 10
write_maxlag = 5
# The User-Agent names the operator, as the Wikimedia User-Agent policy asks.
user_agent_description = "spinach-bot; operator: " + os.environ.get("SPINACH_CONTACT", "unknown")
