// Chinese/English labels (cheap: a flat dictionary). English is the fallback.
const zh: Record<string, string> = {
  Run: '运行', History: '历史', Settings: '设置', Devices: '设备', Mirror: '镜像', Task: '任务', Timeline: '时间线',
  'Start virtual phone': '启动虚拟手机', Refresh: '刷新', Use: '使用', 'In use': '使用中', Start: '开始', Stop: '停止',
  'Max steps': '最大步数', 'Model profile': '模型配置', 'Access mode': '安全模式', Off: '关闭', Wary: '谨慎',
  'Ask me (hard)': '询问我（严格）', Reviewer: '审查员', Approve: '批准', Reject: '拒绝', 'Hand back': '交还控制',
  Send: '发送', Save: '保存', Delete: '删除', 'Save key': '保存密钥', Export: '导出', Recent: '最近', Presets: '预设',
  'No phone selected': '未选择手机', 'Approval needed': '需要批准', 'The agent asks': '智能体提问',
  'Reviews left': '剩余审查', 'Failures left': '剩余失败', 'Denials in a row': '连续拒绝', 'override pending': '个待用放行',
  'No denials yet.': '尚无拒绝。', 'Allow once': '放行一次', 'Allowed once': '已放行一次',
  Pause: '暂停', Resume: '继续', 'Approve for me': '替我审批',
  'Stored in keyring': '已存入钥匙串', 'No key stored': '未存储密钥', Steps: '步骤', Tokens: '令牌', Cost: '费用',
};
let lang = $state<'en' | 'zh'>('en');
export function t(s: string): string {
  return lang === 'zh' ? (zh[s] ?? s) : s;
}
export function setLang(l: 'en' | 'zh') {
  lang = l;
}
export function getLang(): 'en' | 'zh' {
  return lang;
}
